package supervise

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"sync"
)

// Tokens is the registry of per-spawn MCP tokens (HARNESS_MCP_TOKEN). A
// token maps to the unit and run it was minted for and dies with the run.
// It is safe for concurrent use.
type Tokens struct {
	mu sync.Mutex
	// byHash is keyed by sha256(token), so a lookup never compares the raw
	// token with a map key; the stored token is then compared in constant
	// time.
	byHash map[[sha256.Size]byte]tokenEntry
	byRun  map[tokenRun][sha256.Size]byte
}

type tokenRun struct {
	unit string
	run  uint64
}

type tokenEntry struct {
	token []byte
	tokenRun
}

// NewTokens returns an empty registry.
func NewTokens() *Tokens {
	return &Tokens{byHash: map[[sha256.Size]byte]tokenEntry{}, byRun: map[tokenRun][sha256.Size]byte{}}
}

// Mint returns a fresh random token (32 bytes, hex) for run of unit,
// replacing any earlier token of the same run.
func (t *Tokens) Mint(unit string, run uint64) string {
	var b [32]byte
	// crypto/rand.Read never returns an error on supported platforms (it
	// panics instead), so there is nothing to handle here.
	_, _ = rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	h := sha256.Sum256([]byte(tok))
	key := tokenRun{unit, run}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.byRun[key]; ok {
		delete(t.byHash, old)
	}
	t.byHash[h] = tokenEntry{token: []byte(tok), tokenRun: key}
	t.byRun[key] = h
	return tok
}

// Lookup returns the unit and run a live token belongs to.
func (t *Tokens) Lookup(token string) (unit string, run uint64, ok bool) {
	h := sha256.Sum256([]byte(token))
	t.mu.Lock()
	e, found := t.byHash[h]
	t.mu.Unlock()
	if !found || subtle.ConstantTimeCompare(e.token, []byte(token)) != 1 {
		return "", 0, false
	}
	return e.unit, e.run, true
}

// TokenFor returns the live token of run of unit, for the supervisor's
// owner (never for an MCP answer).
func (t *Tokens) TokenFor(unit string, run uint64) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.byRun[tokenRun{unit, run}]
	if !ok {
		return "", false
	}
	return string(t.byHash[h].token), true
}

// Revoke forgets the token of run of unit; unknown runs are ignored.
func (t *Tokens) Revoke(unit string, run uint64) {
	key := tokenRun{unit, run}
	t.mu.Lock()
	defer t.mu.Unlock()
	if h, ok := t.byRun[key]; ok {
		delete(t.byHash, h)
		delete(t.byRun, key)
	}
}

// Package dashtoken keeps the web dashboard's own tokens (docs/design/web.md):
// `harness mcp token --dashboard [--grant CLASSES]` mints one with a grant
// of its own, `--revoke ID` ends it. The store is a JSON file in the state
// dir holding each token's SHA-256, never the token itself, so the file
// (and anything that renders it) cannot sign anyone in. The CLI writes it;
// the daemon's dashboard reads it again whenever it changes, so a revoked
// token's sessions end at their next request.
package dashtoken

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// File is the store's name in the state dir.
const File = "dashboard-tokens.json"

// Prefix starts every dashboard token, so one pasted in the wrong place is
// recognisable (and scanners can find it).
const Prefix = "hdt_"

// Token is one minted token as the store keeps it.
type Token struct {
	// ID names the token for --revoke and in logs: the first 12 hex
	// digits of its hash, so it says nothing of the token.
	ID string `json:"id"`
	// Hash is the hex SHA-256 of the token.
	Hash string `json:"sha256"`
	// Grant is what the token's sessions may do, in mcp_allow's grammar.
	Grant []string `json:"grant"`
	// Created is when it was minted.
	Created time.Time `json:"created"`
}

// Path is the store's path in stateDir.
func Path(stateDir string) string { return filepath.Join(stateDir, File) }

// Mint creates a token with grant (mcp_allow entries; empty means
// ["read"]), records its hash in the store of stateDir and returns the
// token, shown once.
func Mint(stateDir string, grant []string, now time.Time) (string, Token, error) {
	if len(grant) == 0 {
		grant = []string{string(api.Read)}
	}
	g, err := api.ParseGrant(grant)
	if err != nil {
		return "", Token{}, errcode.Errorf(errcode.InvalidArgument, "dashboard token: grant: %v", err)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", Token{}, fmt.Errorf("dashboard token: random: %w", err)
	}
	tok := Prefix + hex.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(tok))
	hash := hex.EncodeToString(sum[:])
	t := Token{ID: hash[:12], Hash: hash, Grant: g.Strings(), Created: now.UTC()}
	err = update(stateDir, func(ts []Token) ([]Token, error) { return append(ts, t), nil })
	if err != nil {
		return "", Token{}, err
	}
	return tok, t, nil
}

// Revoke removes the token with id (or every token for "all"). An unknown
// id is invalid_argument.
func Revoke(stateDir, id string) (int, error) {
	n := 0
	err := update(stateDir, func(ts []Token) ([]Token, error) {
		kept := slices.DeleteFunc(ts, func(t Token) bool { return id == "all" || t.ID == id })
		n = len(ts) - len(kept)
		if n == 0 && id != "all" {
			return nil, errcode.Errorf(errcode.InvalidArgument, "no dashboard token %s", errcode.Quote(id))
		}
		return kept, nil
	})
	return n, err
}

// List returns the tokens of stateDir's store.
func List(stateDir string) ([]Token, error) {
	return read(Path(stateDir))
}

// update rewrites the store under an exclusive lock on a lock file beside
// it, through a temporary file renamed into place, so a reader never sees
// half a file and two minting CLIs do not lose each other's token.
func update(stateDir string, change func([]Token) ([]Token, error)) error {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return fmt.Errorf("dashboard tokens: state dir: %w", err)
	}
	path := Path(stateDir)
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("dashboard tokens: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("dashboard tokens: lock: %w", err)
	}
	ts, err := read(path)
	if err != nil {
		return err
	}
	if ts, err = change(ts); err != nil {
		return err
	}
	data, err := json.MarshalIndent(ts, "", "  ")
	if err != nil {
		return fmt.Errorf("dashboard tokens: %w", err)
	}
	tmp, err := os.CreateTemp(stateDir, File+".tmp*")
	if err != nil {
		return fmt.Errorf("dashboard tokens: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("dashboard tokens: write: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("dashboard tokens: write: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("dashboard tokens: %w", err)
	}
	return nil
}

func read(path string) ([]Token, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dashboard tokens: %w", err)
	}
	var ts []Token
	if err := json.Unmarshal(data, &ts); err != nil {
		return nil, fmt.Errorf("dashboard tokens: %s is malformed (delete it and mint new tokens): %w", path, err)
	}
	return ts, nil
}

// Verifier answers whether a presented token is a live dashboard token. It
// reads the store again when the file changes (size, mtime or inode), so
// a token minted or revoked by the CLI counts from the next check.
type Verifier struct {
	path string

	mu     sync.Mutex
	stamp  stamp
	tokens []Token
	err    error
}

type stamp struct {
	ok    bool
	size  int64
	mtime time.Time
	ino   uint64
}

// NewVerifier returns a Verifier of stateDir's store.
func NewVerifier(stateDir string) *Verifier { return &Verifier{path: Path(stateDir)} }

func (v *Verifier) load() ([]Token, error) {
	var st stamp
	if info, err := os.Stat(v.path); err == nil {
		st = stamp{ok: true, size: info.Size(), mtime: info.ModTime()}
		if sys, ok := info.Sys().(*syscall.Stat_t); ok {
			st.ino = sys.Ino
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if st != v.stamp || v.err != nil {
		v.tokens, v.err = read(v.path)
		v.stamp = st
	}
	return v.tokens, v.err
}

// Check returns the stored token the presented one hashes to; false when
// there is none (never minted, or revoked).
func (v *Verifier) Check(token string) (Token, bool) {
	ts, err := v.load()
	if err != nil {
		return Token{}, false
	}
	sum := sha256.Sum256([]byte(token))
	for _, t := range ts {
		h, err := hex.DecodeString(t.Hash)
		if err == nil && subtle.ConstantTimeCompare(h, sum[:]) == 1 {
			return t, true
		}
	}
	return Token{}, false
}

// Live reports whether the token with id is still in the store.
func (v *Verifier) Live(id string) (Token, bool) {
	ts, err := v.load()
	if err != nil {
		return Token{}, false
	}
	for _, t := range ts {
		if t.ID == id {
			return t, true
		}
	}
	return Token{}, false
}

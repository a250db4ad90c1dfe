// Package device keeps the devices paired with the listener for people
// (docs/design/web.md): single-use pairing codes that expire, and the
// device records a pairing makes, persisted in the state dir with a hash
// of each device's secret, never the secret. The daemon owns the store:
// control's pair and devices ops make and end devices, the dashboard
// redeems codes and signs devices in by their cookie.
package device

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// File is the device records' file in the state dir.
const File = "devices.json"

// Bounds of the store.
const (
	// maxPending bounds the codes waiting to be used.
	maxPending = 64
	// maxDevices bounds the paired devices.
	maxDevices = 256
	// keepSpent is how long a used or expired code is remembered, so
	// that opening it again says which it was.
	keepSpent = 24 * time.Hour
	// seenEvery bounds how often a device's last_seen is written to disk.
	seenEvery = time.Minute
)

// The rate limit of pairing attempts: a bucket of wrongBurst wrong codes,
// one back every wrongRefill. An empty bucket answers every attempt "too
// many" before any code is looked at.
const (
	wrongBurst  = 10
	wrongRefill = 6 * time.Second
)

// Reasons a code signs nothing in.
var (
	ErrCodeUsed    = errors.New("this pairing code was used already: ask for a new one with `harness pair`")
	ErrCodeExpired = errors.New("this pairing code has expired: ask for a new one with `harness pair`")
	ErrCodeUnknown = errors.New("this is not a pairing code of this harness: ask for a new one with `harness pair`")
	// ErrTooMany: too many wrong codes lately; try again in a minute.
	ErrTooMany = errors.New("too many wrong pairing codes: wait a minute and try again")
)

// nameRE is a device's name: what `devices revoke` is typed with.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// record is a device as the file keeps it.
type record struct {
	Name     string    `json:"name"`
	Hash     string    `json:"sha256"` // hex SHA-256 of the device secret
	Grant    []string  `json:"grant"`
	Created  time.Time `json:"created"`
	LastSeen time.Time `json:"last_seen,omitzero"`
	LastAddr string    `json:"last_addr,omitempty"`
}

// pending is a pairing code: its hash, never the code, is the key.
type pending struct {
	name    string
	grant   []string
	expires time.Time
	used    bool
}

// Device is a paired device as the dashboard sees it.
type Device struct {
	Name  string
	Grant api.Grant
	// Revoked is closed when the device is revoked: its streams end.
	Revoked <-chan struct{}
}

// Store is the devices and pending codes of one daemon.
type Store struct {
	path string
	now  func() time.Time

	mu       sync.Mutex
	devices  map[string]*record // by name
	byHash   map[string]string  // secret hash -> name
	revoked  map[string]chan struct{}
	codes    map[string]*pending // code hash -> pending
	tokens   float64             // the wrong-code bucket
	refilled time.Time
	written  map[string]time.Time // when a device's last_seen was last written
}

// Open reads the device records of stateDir; now is the clock (nil:
// time.Now).
func Open(stateDir string, now func() time.Time) (*Store, error) {
	if now == nil {
		now = time.Now
	}
	s := &Store{path: filepath.Join(stateDir, File), now: now, devices: map[string]*record{}, byHash: map[string]string{},
		revoked: map[string]chan struct{}{}, codes: map[string]*pending{}, tokens: wrongBurst, refilled: now(), written: map[string]time.Time{}}
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("devices: %w", err)
	}
	var recs []*record
	if err := json.Unmarshal(data, &recs); err != nil {
		return nil, fmt.Errorf("devices: %s is malformed (delete it and pair again): %w", s.path, err)
	}
	for _, r := range recs {
		s.devices[r.Name] = r
		s.byHash[r.Hash] = r.Name
		s.revoked[r.Name] = make(chan struct{})
	}
	return s, nil
}

func hashOf(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// random is n random bytes in lower-case base32 without padding: easy to
// read aloud, safe in a URL.
func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// Pair makes a single-use code for a device called name (empty: one is
// picked) with grant (empty: read,input), usable for ttl (0: the default).
func (s *Store) Pair(name string, grant []string, ttl time.Duration) (code string, p api.PairResult, err error) {
	if ttl == 0 {
		ttl = api.DefaultPairTTL
	}
	if ttl < api.MinPairTTL || ttl > api.MaxPairTTL {
		return "", p, errcode.Errorf(errcode.InvalidArgument, "pair: ttl %s is out of range: want %s to %s", ttl, api.MinPairTTL, api.MaxPairTTL)
	}
	if len(grant) == 0 {
		grant = []string{string(api.Read), string(api.Input)}
	}
	g, err := api.ParseGrant(grant)
	if err != nil {
		return "", p, errcode.Errorf(errcode.InvalidArgument, "pair: grant: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.sweepLocked(now)
	if name == "" {
		for i := 1; ; i++ {
			name = fmt.Sprintf("device-%d", i)
			if !s.takenLocked(name) {
				break
			}
		}
	}
	switch {
	case !nameRE.MatchString(name):
		return "", p, errcode.Errorf(errcode.InvalidArgument, "pair: name %s: want letters, digits, '.', '_' or '-', at most 64", errcode.Quote(name))
	case s.takenLocked(name):
		return "", p, errcode.Errorf(errcode.InvalidArgument, "pair: a device named %q is paired or being paired: revoke it first or choose another --name", name)
	case len(s.devices) >= maxDevices:
		return "", p, errcode.Errorf(errcode.Busy, "pair: %d devices are paired already: revoke some first", maxDevices)
	}
	live := 0
	for _, c := range s.codes {
		if !c.used && now.Before(c.expires) {
			live++
		}
	}
	if live >= maxPending {
		return "", p, errcode.Errorf(errcode.Busy, "pair: %d pairing codes wait to be used already: wait for them to expire", maxPending)
	}
	code = random(20)
	exp := now.Add(ttl)
	s.codes[hashOf(code)] = &pending{name: name, grant: g.Strings(), expires: exp}
	return code, api.PairResult{Code: code, Name: name, Grant: g.Strings(), Expires: exp.UTC()}, nil
}

// takenLocked reports whether name is a device's or a live code's.
func (s *Store) takenLocked(name string) bool {
	if _, ok := s.devices[name]; ok {
		return true
	}
	now := s.now()
	for _, c := range s.codes {
		if c.name == name && !c.used && now.Before(c.expires) {
			return true
		}
	}
	return false
}

// sweepLocked forgets codes spent or expired for longer than keepSpent.
func (s *Store) sweepLocked(now time.Time) {
	for h, c := range s.codes {
		if now.Sub(c.expires) > keepSpent {
			delete(s.codes, h)
		}
	}
}

// Redeem uses code, once: it makes the device record and returns the
// device's secret (for its cookie). A used, expired or unknown code is
// ErrCodeUsed, ErrCodeExpired or ErrCodeUnknown, and a flood of wrong
// codes ErrTooMany, checked before anything else.
func (s *Store) Redeem(code, addr string) (secret string, d Device, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.tokens = min(wrongBurst, s.tokens+now.Sub(s.refilled).Seconds()/wrongRefill.Seconds())
	s.refilled = now
	if s.tokens < 1 {
		return "", d, ErrTooMany
	}
	c := s.codes[hashOf(code)]
	switch {
	case c == nil:
		s.tokens--
		return "", d, ErrCodeUnknown
	case c.used:
		return "", d, ErrCodeUsed
	case !now.Before(c.expires):
		return "", d, ErrCodeExpired
	case len(s.devices) >= maxDevices:
		return "", d, fmt.Errorf("devices: %d are paired already: %w", maxDevices, errcode.ErrBusy)
	}
	c.used = true
	secret = "hdv_" + random(32)
	r := &record{Name: c.name, Hash: hashOf(secret), Grant: c.grant, Created: now.UTC(), LastSeen: now.UTC(), LastAddr: addr}
	s.devices[r.Name] = r
	s.byHash[r.Hash] = r.Name
	ch := make(chan struct{})
	s.revoked[r.Name] = ch
	s.written[r.Name] = now
	if err := s.writeLocked(); err != nil {
		delete(s.devices, r.Name)
		delete(s.byHash, r.Hash)
		return "", d, err
	}
	g, _ := api.ParseGrant(r.Grant)
	return secret, Device{Name: r.Name, Grant: g, Revoked: ch}, nil
}

// Check finds the device a secret belongs to, and notes it was seen from
// addr now (written to disk once a minute at most).
func (s *Store) Check(secret, addr string) (Device, bool) {
	if !strings.HasPrefix(secret, "hdv_") {
		return Device{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	name, ok := s.byHash[hashOf(secret)]
	if !ok {
		return Device{}, false
	}
	g, err := s.seenLocked(s.devices[name], addr)
	if err != nil {
		return Device{}, false
	}
	return Device{Name: name, Grant: g, Revoked: s.revoked[name]}, true
}

// Live reports whether the device called name is still paired, with its
// grant, and notes it was seen from addr now.
func (s *Store) Live(name, addr string) (api.Grant, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.devices[name]
	if !ok {
		return api.Grant{}, false
	}
	g, err := s.seenLocked(r, addr)
	return g, err == nil
}

// seenLocked notes r was seen from addr now, written to disk when the
// address changed or once a minute at most; it returns r's grant.
func (s *Store) seenLocked(r *record, addr string) (api.Grant, error) {
	now := s.now()
	r.LastSeen = now.UTC()
	moved := r.LastAddr != addr
	r.LastAddr = addr
	if moved || now.Sub(s.written[r.Name]) >= seenEvery {
		s.written[r.Name] = now
		_ = s.writeLocked() // last_seen is a courtesy: a full disk signs nobody out
	}
	return api.ParseGrant(r.Grant)
}

// List returns the devices by name.
func (s *Store) List() []api.DeviceInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]api.DeviceInfo, 0, len(s.devices))
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range s.devices {
			if !yield(n) {
				return
			}
		}
	}) {
		out = append(out, info(s.devices[name]))
	}
	return out
}

func info(r *record) api.DeviceInfo {
	d := api.DeviceInfo{Name: r.Name, Grant: slices.Clone(r.Grant), Created: r.Created, LastAddr: r.LastAddr}
	if !r.LastSeen.IsZero() {
		t := r.LastSeen
		d.LastSeen = &t
	}
	return d
}

// Revoke ends the device called name: it is gone from the file, its
// secret signs nothing in, and its Revoked channel is closed. An unknown
// name is not_found, naming the devices there are.
func (s *Store) Revoke(name string) (api.DeviceInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.devices[name]
	if !ok {
		known := slices.Sorted(func(yield func(string) bool) {
			for n := range s.devices {
				if !yield(n) {
					return
				}
			}
		})
		if len(known) == 0 {
			return api.DeviceInfo{}, errcode.ErrNotFound.Errorf("no device %s: none is paired", errcode.Quote(name))
		}
		return api.DeviceInfo{}, errcode.ErrNotFound.Errorf("no device %s: paired are %s", errcode.Quote(name), strings.Join(known, ", "))
	}
	delete(s.devices, name)
	delete(s.byHash, r.Hash)
	if ch := s.revoked[name]; ch != nil {
		close(ch)
	}
	delete(s.revoked, name)
	delete(s.written, name)
	if err := s.writeLocked(); err != nil {
		// Revoked in memory already: the daemon refuses it from now on,
		// and the next write of the file leaves it out.
		return info(r), fmt.Errorf("devices: %s revoked, but the file was not written: %w", name, err)
	}
	return info(r), nil
}

// writeLocked writes the records (0600) through a temporary file.
func (s *Store) writeLocked() error {
	recs := make([]*record, 0, len(s.devices))
	for _, r := range s.devices {
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b *record) int { return strings.Compare(a.Name, b.Name) })
	data, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return fmt.Errorf("devices: %w", err)
	}
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("devices: %w", err)
	}
	tmp, err := os.CreateTemp(dir, File+".tmp*")
	if err != nil {
		return fmt.Errorf("devices: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	_, werr := tmp.Write(append(data, '\n'))
	if err := errors.Join(werr, tmp.Close()); err != nil {
		return fmt.Errorf("devices: write: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("devices: %w", err)
	}
	return nil
}

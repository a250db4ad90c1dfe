// Package upauth is OAuth for remote upstreams (docs/design/mcp.md): the sign-in
// (`harness mcp login`: discovery, dynamic client registration or a
// configured client_id, authorization code with PKCE, the redirect taken on
// a loopback port), the token store (one 0600 file per upstream under the
// state dir), and the go-sdk OAuthHandler the broker's connections use,
// which refreshes before expiry and on a 401 and says "needs login" when
// the authorization server refuses the refresh token.
//
// The flows are the go-sdk's (auth.AuthorizationCodeHandler) and
// golang.org/x/oauth2's; this package adds where tokens live and when a
// person has to sign in again. Tokens never leave it: they are not in any
// error, log line or answer.
package upauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/harness-dev/harness/internal/errcode"
)

// ErrNeedsLogin is why a connection to an upstream with auth = "oauth" has
// no usable token: never signed in, signed out, or its refresh token was
// refused. It is an upstream_unavailable error.
var ErrNeedsLogin = fmt.Errorf("needs login: %w", errcode.ErrUpstreamUnavailable)

// Record is what the store keeps of one upstream's sign-in: the client the
// authorization server knows harness as, where to refresh, and the token.
type Record struct {
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	AuthURL      string           `json:"auth_url"`
	TokenURL     string           `json:"token_url"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style"`
	Scopes       []string         `json:"scopes,omitempty"`
	Token        *oauth2.Token    `json:"token,omitempty"`
	// Obtained is when Token was issued: with its expiry, how long it
	// lives, which says how early to refresh it.
	Obtained time.Time `json:"obtained"`
	// Refused is set (a time and the server's error code, never a token)
	// when the refresh token was refused: the upstream needs a login.
	Refused string `json:"refused,omitempty"`
	// SignedIn is when the login completed.
	SignedIn time.Time `json:"signed_in"`
}

// config is the oauth2 configuration that refreshes r's token.
func (r *Record) config() *oauth2.Config {
	return &oauth2.Config{ClientID: r.ClientID, ClientSecret: r.ClientSecret, Scopes: r.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: r.AuthURL, TokenURL: r.TokenURL, AuthStyle: r.AuthStyle}}
}

// usable reports whether r can authorize requests (possibly after a
// refresh).
func (r *Record) usable() bool {
	return r != nil && r.Refused == "" && r.Token != nil && (r.Token.AccessToken != "" || r.Token.RefreshToken != "")
}

// Store keeps the sign-ins of the upstreams in one directory (the state
// dir's oauth/), a file per unit, readable by the daemon's user only.
type Store struct {
	dir string

	mu     sync.Mutex
	logins map[string]*Login // unit -> the sign-in in progress
}

// NewStore is the store in dir (created on first write, 0700).
func NewStore(dir string) *Store {
	return &Store{dir: dir, logins: map[string]*Login{}}
}

// Dir is where the store keeps its files.
func (s *Store) Dir() string { return s.dir }

// path is unit's file: the unit name ("mcp.KEY", "PROJECT/mcp.KEY")
// escaped into one path element.
func (s *Store) path(unit string) string {
	return filepath.Join(s.dir, url.PathEscape(unit)+".json")
}

// Load reads unit's record; nil (and no error) when there is none.
func (s *Store) Load(unit string) (*Record, error) {
	data, err := os.ReadFile(s.path(unit))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("upauth: read the sign-in of %s: %w", unit, err)
	}
	r := new(Record)
	if err := json.Unmarshal(data, r); err != nil {
		// The message of a JSON error can quote the file: say only where.
		return nil, fmt.Errorf("upauth: the sign-in file of %s (%s) is not valid JSON: %w", unit, s.path(unit), errcode.ErrInternal)
	}
	return r, nil
}

// Save writes unit's record atomically, 0600.
func (s *Store) Save(unit string, r *Record) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("upauth: make %s: %w", s.dir, err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("upauth: encode the sign-in of %s: %v: %w", unit, err, errcode.ErrInternal)
	}
	f, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("upauth: write the sign-in of %s: %w", unit, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("upauth: write the sign-in of %s: %w", unit, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("upauth: write the sign-in of %s: %w", unit, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("upauth: write the sign-in of %s: %w", unit, err)
	}
	if err := os.Rename(tmp, s.path(unit)); err != nil {
		return fmt.Errorf("upauth: write the sign-in of %s: %w", unit, err)
	}
	return nil
}

// Delete forgets unit's sign-in (`harness mcp logout`). Deleting what is
// not there is not an error.
func (s *Store) Delete(unit string) error {
	if err := os.Remove(s.path(unit)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("upauth: delete the sign-in of %s: %w", unit, err)
	}
	return nil
}

// NeedsLogin reports whether unit has no usable sign-in, and why in words
// that hold no secret.
func (s *Store) NeedsLogin(unit string) (bool, string) {
	r, err := s.Load(unit)
	switch {
	case err != nil:
		return true, err.Error()
	case r == nil:
		return true, "not signed in"
	case r.Refused != "":
		return true, "the authorization server refused the refresh token (" + r.Refused + ")"
	case !r.usable():
		return true, "no token"
	}
	return false, ""
}

// Hint is what a person is told to do about an upstream that needs a
// login.
func Hint(key string) string {
	return fmt.Sprintf("run `harness mcp login %s`", key)
}

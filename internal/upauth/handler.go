package upauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/harness-dev/harness/internal/errcode"
)

// refreshAhead is how long before its expiry a token is refreshed, so a
// call never goes out with a token that expires on the way; a token that
// lives less than three times that is refreshed when a third of its life
// is left.
const refreshAhead = 30 * time.Second

// refreshTimeout bounds one refresh when the handler makes its own client:
// every request of the upstream's connections waits for it under h.mu, and
// a token endpoint that never answers would hold them all (tests shorten
// it).
var refreshTimeout = 30 * time.Second

// ahead is how early r's token is refreshed.
func ahead(r *Record) time.Duration {
	life := r.Token.Expiry.Sub(r.Obtained)
	if r.Obtained.IsZero() || life <= 0 {
		return refreshAhead
	}
	return min(refreshAhead, life/3)
}

// Handler is the go-sdk OAuthHandler of one upstream's connections: the
// stored token on every request, refreshed before it expires and once more
// when the server answers 401; a refused refresh marks the sign-in so
// `mcp status` shows needs_login. It never starts a sign-in (a daemon has
// nobody to show a URL to): that is `harness mcp login`.
type Handler struct {
	store  *Store
	unit   string
	name   string // as a person types it after `harness mcp login`
	client *http.Client
	now    func() time.Time

	mu   sync.Mutex
	last []string // the access and refresh token last handed out (Tokens)
}

// Tokens are the access and refresh tokens in use, for hiding them in
// what an upstream answers.
func (h *Handler) Tokens() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// remember notes tok as the one in use; h.mu is held.
func (h *Handler) remember(tok *oauth2.Token) {
	h.last = h.last[:0:0]
	for _, s := range []string{tok.AccessToken, tok.RefreshToken} {
		if s != "" {
			h.last = append(h.last, s)
		}
	}
}

var _ auth.OAuthHandler = (*Handler)(nil)

// Handler is the OAuthHandler for unit's connections; name is what the
// user types to sign it in (KEY or PROJECT/KEY), client makes the refresh
// requests (nil: a client of its own whose requests end after
// refreshTimeout; http.DefaultClient waits forever).
func (s *Store) Handler(unit, name string, client *http.Client) *Handler {
	if client == nil {
		client = &http.Client{Timeout: refreshTimeout}
	}
	return &Handler{store: s, unit: unit, name: name, client: client, now: time.Now}
}

// TokenSource implements auth.OAuthHandler: the handler itself, so every
// request reads the store's current token (a login or a logout applies to
// the next request).
func (h *Handler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return tokenSource{h}, nil
}

type tokenSource struct{ h *Handler }

// Token implements oauth2.TokenSource.
func (t tokenSource) Token() (*oauth2.Token, error) { return t.h.token(false) }

// Authorize implements auth.OAuthHandler: after a 401 the token is
// refreshed once (the server may have revoked it early); after a 403, or
// when nothing can be refreshed, the upstream needs a login.
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	resp.Body.Close()
	if resp.StatusCode == http.StatusForbidden {
		return h.needsLogin("the server refused the token (HTTP 403): sign in again, with the scopes it needs")
	}
	_, err := h.token(true)
	return err
}

// token is the access token to send, refreshed when it is about to expire
// or when force says the server refused it.
func (h *Handler) token(force bool) (*oauth2.Token, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, err := h.store.Load(h.unit)
	if err != nil {
		return nil, err
	}
	if !r.usable() {
		_, why := h.store.NeedsLogin(h.unit)
		return nil, h.needsLogin(why)
	}
	tok := *r.Token
	if !force && tok.AccessToken != "" && (tok.Expiry.IsZero() || tok.Expiry.Add(-ahead(r)).After(h.now())) {
		h.remember(&tok)
		return &tok, nil
	}
	if tok.RefreshToken == "" {
		return nil, h.markRefused(r, "the token expired and the server gave no refresh token")
	}
	// Expired as far as oauth2 knows, so TokenSource refreshes now.
	old := tok
	old.AccessToken, old.Expiry = "", time.Unix(1, 0)
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, h.client)
	fresh, err := r.config().TokenSource(ctx, &old).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode >= 400 && re.Response.StatusCode < 500 {
			// invalid_grant and its kin: the refresh token is no good.
			return nil, h.markRefused(r, fmt.Sprintf("%s at %s", refusal(re), h.now().UTC().Format(time.RFC3339)))
		}
		// The server could not be reached or failed: try again later,
		// the sign-in stands. The error's text is oauth2's, which
		// quotes the response body, so only its kind is said.
		return nil, fmt.Errorf("upauth: %s: refresh the token at %s: %s: %w", h.name, r.TokenURL, failure(err), errcode.ErrUpstreamUnavailable)
	}
	r.Token, r.Obtained = fresh, h.now()
	if err := h.store.Save(h.unit, r); err != nil {
		return nil, err
	}
	h.remember(fresh)
	return fresh, nil
}

// refusal is the OAuth error code of a refused refresh, never its body.
func refusal(re *oauth2.RetrieveError) string {
	if re.ErrorCode != "" {
		return re.ErrorCode
	}
	return fmt.Sprintf("HTTP %d", re.Response.StatusCode)
}

// failure says what went wrong with a refresh without its text.
func failure(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil {
		return fmt.Sprintf("HTTP %d", re.Response.StatusCode)
	}
	return "the authorization server could not be reached"
}

// markRefused records that unit needs a login, and says so.
func (h *Handler) markRefused(r *Record, why string) error {
	r.Refused = why
	r.Token = nil // a dead refresh token is kept nowhere
	if err := h.store.Save(h.unit, r); err != nil {
		return err
	}
	return h.needsLogin("the authorization server refused the refresh token (" + why + ")")
}

func (h *Handler) needsLogin(why string) error {
	return &LoginError{Name: h.name, Why: why}
}

// LoginError says an upstream needs a login and why; it is ErrNeedsLogin
// (so upstream_unavailable) to errors.Is.
type LoginError struct {
	Name string // KEY or PROJECT/KEY
	Why  string // holds no secret
}

func (e *LoginError) Error() string {
	return fmt.Sprintf("upstream %s needs a login (%s): %s", e.Name, e.Why, Hint(e.Name))
}

// Unwrap makes a LoginError ErrNeedsLogin.
func (e *LoginError) Unwrap() error { return ErrNeedsLogin }

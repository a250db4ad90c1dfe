package upauth

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"net"
	"net/http"
	"time"

	"golang.org/x/oauth2"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/harness-dev/harness/internal/endpoint"
	"github.com/harness-dev/harness/internal/errcode"
)

// DefaultLoginTimeout bounds how long a sign-in waits for the browser to
// come back to the loopback redirect.
const DefaultLoginTimeout = 10 * time.Minute

// LoginConfig is what a sign-in needs to know of an upstream.
type LoginConfig struct {
	// URL is the upstream's MCP endpoint; Header its configured headers,
	// sent with the request that asks the server how to sign in.
	URL    string
	Header http.Header
	// ClientID is the configured client_id; empty registers a client
	// dynamically (RFC 7591).
	ClientID string
	// Scopes, when set, are requested instead of the ones the server
	// advertises.
	Scopes []string
	// Client makes every request of the flow (nil: a client of its own).
	Client *http.Client
	// Timeout bounds the wait for the redirect (0: DefaultLoginTimeout).
	Timeout time.Duration
	// Secrets are hidden in every error the sign-in reports
	// (endpoint.Target.Secrets): a request's error quotes its URL, whose
	// query may carry an env_file value.
	Secrets []string
}

// Login is one sign-in in progress.
type Login struct {
	// URL is the authorization URL a person opens in a browser.
	URL string
	// Redirect is the loopback URL the browser comes back to.
	Redirect string

	cancel context.CancelFunc
	result chan struct{} // closed when err is set
	done   chan struct{} // closed when everything is over
	err    error
}

// Wait blocks until the sign-in is over (nil: the tokens are stored) or
// ctx ends.
func (l *Login) Wait(ctx context.Context) error {
	select {
	case <-l.done:
		return l.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done is closed when the sign-in is over.
func (l *Login) Done() <-chan struct{} { return l.done }

// Pending is unit's sign-in in progress, or the last one if it is over
// (Wait answers how it ended); nil when none was begun.
func (s *Store) Pending(unit string) *Login {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logins[unit]
}

// Close ends every sign-in in progress and waits for them.
func (s *Store) Close() {
	s.mu.Lock()
	var all []*Login
	for _, l := range s.logins {
		all = append(all, l)
	}
	s.mu.Unlock()
	for _, l := range all {
		l.cancel()
		<-l.done
	}
}

type callback struct {
	res *auth.AuthorizationResult
	err error
}

// Begin starts signing unit in: it asks the upstream how (the 401's
// WWW-Authenticate, RFC 9728 and RFC 8414 metadata), registers a client
// when cfg has no client_id, listens on a loopback port for the redirect,
// and returns once the authorization URL is known. The rest (the code,
// its exchange with the PKCE verifier, storing the tokens) happens when
// the browser comes back; finished (if not nil) is then called with the
// outcome, before Wait returns. A sign-in already in progress for unit is
// cancelled.
func (s *Store) Begin(unit, name string, cfg LoginConfig, finished func(error)) (*Login, error) {
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	hide := endpoint.Scrub(cfg.Secrets)
	ctx, cancel := context.WithTimeout(context.Background(), cmpDur(cfg.Timeout, DefaultLoginTimeout))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		return nil, fmt.Errorf("upauth: %s: listen for the sign-in redirect: %w", name, err)
	}
	redirect := fmt.Sprintf("http://%s/callback", ln.Addr())
	l := &Login{Redirect: redirect, cancel: cancel, result: make(chan struct{}), done: make(chan struct{})}

	urls := make(chan string, 1)
	back := make(chan callback, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: redirectHandler(name, back, l)}
	go srv.Serve(ln) //nolint:errcheck // ends with Close below

	hcfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         redirect,
		Client:              cfg.Client,
		RequestRefreshToken: true,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			urls <- args.URL
			select {
			case cb := <-back:
				return cb.res, cb.err
			case <-ctx.Done():
				return nil, fmt.Errorf("no redirect came back to %s: %w", redirect, ctx.Err())
			}
		},
		NewTokenSource: func(ctx context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			rec := &Record{ClientID: oc.ClientID, ClientSecret: oc.ClientSecret, AuthURL: oc.Endpoint.AuthURL,
				TokenURL: oc.Endpoint.TokenURL, AuthStyle: oc.Endpoint.AuthStyle, Scopes: oc.Scopes, Token: tok, Obtained: time.Now(), SignedIn: time.Now()}
			if err := s.Save(unit, rec); err != nil {
				return nil, err
			}
			return oauth2.StaticTokenSource(tok), nil
		},
	}
	if cfg.ClientID != "" {
		hcfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: cfg.ClientID}
	} else {
		hcfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{redirect}, ClientName: "harness", TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		}}
	}
	if len(cfg.Scopes) > 0 {
		scopes := cfg.Scopes
		hcfg.ScopeFilter = func([]string) []string { return scopes }
	}
	finish := func(err error) {
		err = hidden(hide, err)
		l.err = err
		close(l.result)
		// Shutdown lets the redirect's page say how it ended.
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
		scancel()
		cancel()
		// The login stays the unit's (Pending) until the next Begin:
		// `harness mcp login` prints the URL and then asks to wait, and
		// a browser that came back first must not leave that wait
		// without the outcome.
		if finished != nil {
			finished(err)
		}
		close(l.done)
	}
	// fail ends a sign-in that never started: the caller hears of it
	// from Begin's error, not from finished (which would take it for a
	// sign-in that ended well).
	fail := func(err error) (*Login, error) {
		finished = nil
		finish(err)
		return nil, l.err
	}
	h, err := auth.NewAuthorizationCodeHandler(hcfg)
	if err != nil {
		return fail(fmt.Errorf("upauth: %s: %v: %w", name, err, errcode.ErrInvalidArgument))
	}
	req, resp, err := challenge(ctx, cfg)
	if err != nil {
		return fail(fmt.Errorf("upauth: %s: %w", name, err))
	}

	s.mu.Lock()
	if old := s.logins[unit]; old != nil {
		old.cancel()
	}
	s.logins[unit] = l
	s.mu.Unlock()

	ended := make(chan error, 1)
	go func() {
		err := h.Authorize(ctx, req, resp)
		if err != nil {
			err = fmt.Errorf("upauth: %s: sign-in failed: %v: %w", name, err, errcode.ErrUpstreamUnavailable)
		}
		ended <- err
		finish(err)
	}()
	select {
	case l.URL = <-urls:
		return l, nil
	case err := <-ended:
		if err == nil {
			err = fmt.Errorf("upauth: %s: the sign-in ended before it asked for a browser: %w", name, errcode.ErrInternal)
		}
		return nil, hidden(hide, err)
	}
}

// hidden is err with hide applied to its text; it still wraps err, so its
// code stays.
func hidden(hide func(string) string, err error) error {
	if err == nil {
		return nil
	}
	if msg := hide(err.Error()); msg != err.Error() {
		return &scrubbed{msg: msg, err: err}
	}
	return err
}

type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// challenge sends the upstream what a client sends first (initialize)
// without a token, and returns the refusal that says how to sign in.
func challenge(ctx context.Context, cfg LoginConfig) (*http.Request, *http.Response, error) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"harness","version":"login"}}}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("the url: %v: %w", err, errcode.ErrInvalidArgument)
	}
	for k, vs := range cfg.Header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := cfg.Client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("ask the server how to sign in: %v: %w", err, errcode.ErrUpstreamUnavailable)
	}
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		resp.Body.Close()
		return nil, nil, fmt.Errorf("the server answered HTTP %d without a token, not 401: it does not ask for a sign-in: %w", resp.StatusCode, errcode.ErrInvalidArgument)
	}
	return req, resp, nil
}

// redirectHandler takes the browser's return to the loopback port: the
// code and state (or the server's error) go to the flow, the browser gets
// a page saying what happened.
func redirectHandler(name string, back chan<- callback, l *Login) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		var cb callback
		if e := q.Get("error"); e != "" {
			cb.err = fmt.Errorf("the authorization server said %s: %s", errcode.Quote(e), errcode.Quote(q.Get("error_description")))
		} else if q.Get("code") == "" {
			http.Error(w, "no code in the redirect", http.StatusBadRequest)
			return
		} else {
			cb.res = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
		}
		select {
		case back <- cb:
		default:
			http.Error(w, "this sign-in is already over", http.StatusConflict)
			return
		}
		select {
		case <-l.result:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		msg := "harness: signed in to " + name + ". You can close this tab."
		if l.err != nil {
			w.WriteHeader(http.StatusBadRequest)
			msg = "harness: the sign-in to " + name + " failed: " + l.err.Error()
		}
		fmt.Fprintf(w, "<!doctype html><title>harness</title><p>%s</p>\n", html.EscapeString(msg))
	})
	return mux
}

func cmpDur(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

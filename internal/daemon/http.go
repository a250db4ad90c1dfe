package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/harness-dev/harness/internal/actionlink"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/httpmcp"
	"github.com/harness-dev/harness/internal/mcp/session"
	"github.com/harness-dev/harness/internal/web"
)

// httpEndpoint is the optional Streamable HTTP face of the MCP sessions
// ([daemon] mcp_http), loopback only, authenticated by bearer tokens.
type httpEndpoint struct {
	ln  net.Listener
	srv *http.Server
	url string
	err chan error
	web *web.Server // the dashboard on the same listener; nil when not served
	// dashURL is the dashboard's address, shown by daemon_info.
	dashURL string
	// links are the notifications' action links the dashboard serves.
	links *actionlink.Store
}

// listenHTTP binds the endpoint before anything spawns, so harnesses can be
// given its URL (the port may be 0 in the config).
func listenHTTP(cfg *config.Config) (*httpEndpoint, error) {
	if cfg.Daemon.MCPHTTP == "" {
		return nil, nil
	}
	ln, err := httpmcp.Listen(cfg.Daemon.MCPHTTP)
	if err != nil {
		return nil, fmt.Errorf("mcp_http: %w", err)
	}
	origin := "http://" + ln.Addr().String()
	return &httpEndpoint{ln: ln, url: origin + httpmcp.Path, dashURL: origin + "/", err: make(chan error, 1),
		links: actionlink.New(nil)}, nil
}

// serve starts answering; the session layer applies the operator's grant
// in force (the authority reads it from the live config). metrics is
// served at /metrics to the operator. dash, when set, is the dashboard's
// backend: the web dashboard answers every other path (docs/design/web.md).
func (e *httpEndpoint) serve(mgr *session.Manager, stateDir string, maxMessage func() int, metrics http.Handler, dash web.Backend, log *slog.Logger) error {
	tok, err := httpmcp.LoadOrCreateOperatorToken(stateDir)
	if err != nil {
		return fmt.Errorf("mcp_http: operator token: %w", err)
	}
	var h http.Handler = httpmcp.NewHandler(httpmcp.Options{
		Sessions:      mgr,
		OperatorToken: tok,
		IdleTimeout:   30 * time.Minute,
		MaxMessage:    maxMessage,
		Logger:        log,
		Metrics:       metrics,
	})
	maxConns := httpmcp.DefaultMaxConns()
	if dash != nil {
		// The dashboard's streams hold their connections while a page is
		// open: they may take a quarter of the listener's, so agents' MCP
		// calls and sign-ins always find one.
		maxStreams := min(web.DefaultMaxStreams, max(1, maxConns/4))
		e.web, err = web.New(web.Options{Backend: dash, OperatorToken: tok, StateDir: stateDir, Logger: log, MaxStreams: maxStreams,
			Links: e.links})
		if err != nil {
			return fmt.Errorf("dashboard: %w", err)
		}
		h = doors{mcp: h, web: e.web}
	}
	e.srv = httpmcp.NewServer(h, log)
	ln := httpmcp.LimitListener(e.ln, maxConns)
	go func() {
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.err <- err
		}
	}()
	log.Info("mcp http endpoint serving", logkey.URL, e.url, logkey.MaxConns, maxConns)
	if e.web != nil {
		// The address a person opens: said once, where they look first.
		log.Info("web dashboard serving", logkey.URL, e.dashURL)
	}
	return nil
}

func (e *httpEndpoint) shutdown(ctx context.Context) error {
	if e.web != nil {
		// Its event streams and terminals never go idle: end them first,
		// or Shutdown would wait for them until ctx ends.
		e.web.Close()
	}
	if e.srv == nil {
		return e.ln.Close()
	}
	return e.srv.Shutdown(ctx)
}

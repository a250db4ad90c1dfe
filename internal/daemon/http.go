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
	// dashURL is the dashboard's address, shown by daemon_info.
	dashURL string
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
	return &httpEndpoint{ln: ln, url: origin + httpmcp.Path, dashURL: origin + "/", err: make(chan error, 1)}, nil
}

// serve starts answering; the session layer applies the operator's grant
// in force (the authority reads it from the live config). metrics is
// served at /metrics to the operator. dash, when set, is the web
// dashboard, answering every other path (docs/design/web.md).
func (e *httpEndpoint) serve(mgr *session.Manager, tok string, maxMessage func() int, metrics http.Handler, dash *web.Server, log *slog.Logger) {
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
		h = doors{mcp: h, web: dash}
	}
	e.srv = httpmcp.NewServer(h, log)
	ln := httpmcp.LimitListener(e.ln, maxConns)
	go func() {
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.err <- err
		}
	}()
	log.Info("mcp http endpoint serving", logkey.URL, e.url, logkey.MaxConns, maxConns)
	if dash != nil {
		// The address a person opens: said once, where they look first.
		log.Info("web dashboard serving", logkey.URL, e.dashURL)
	}
}

// newDashboard is the web dashboard the HTTP endpoint and the listener
// for people share (one set of sessions). Its streams hold their
// connections while a page is open: they may take a quarter of a
// listener's, so agents' MCP calls and sign-ins always find one.
func newDashboard(dash webBackend, tok, stateDir string, people *peopleListener, tn *tailnetDoor, links *actionlink.Store, remotes web.Remotes, log *slog.Logger) (*web.Server, error) {
	maxStreams := min(web.DefaultMaxStreams, max(1, httpmcp.DefaultMaxConns()/4))
	opt := web.Options{Backend: dash, OperatorToken: tok, StateDir: stateDir, Logger: log, MaxStreams: maxStreams, Links: links, Remotes: remotes}
	if people != nil && people.store != nil {
		opt.Devices, opt.Hosts = people.store, people.hosts
	}
	if tn != nil {
		opt.TailnetUsers, opt.TailnetHosts = tailnetUsers(dash.ctl), tn.hosts
	}
	w, err := web.New(opt)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	return w, nil
}

func (e *httpEndpoint) shutdown(ctx context.Context) error {
	if e.srv == nil {
		return e.ln.Close()
	}
	return e.srv.Shutdown(ctx)
}

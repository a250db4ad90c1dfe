package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/control"
	"github.com/harness-dev/harness/internal/endpoint"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/httpmcp"
	"github.com/harness-dev/harness/internal/tailnet"
	"github.com/harness-dev/harness/internal/web"
)

// tailnetDoor is [web] tailnet (docs/design/web.md): the page for people
// on a tailnet node of the daemon's own. It exists from the start (the
// notifier and daemon_info ask it), its node only once the dashboard
// does; the node joins in the background and never holds the daemon up.
type tailnetDoor struct {
	cfg      config.Tailnet
	stateDir string
	node     atomic.Pointer[tailnet.Node]
	early    string // a failure before the node started (the key's variable unset)
}

// newTailnetDoor is the door of [web] tailnet; nil when it is not set.
func newTailnetDoor(w config.Web, stateDir string) *tailnetDoor {
	if w.Tailnet == nil {
		return nil
	}
	return &tailnetDoor{cfg: *w.Tailnet, stateDir: stateDir}
}

// start joins the tailnet serving dash, the grants of ctl's [web.users].
func (t *tailnetDoor) start(dash http.Handler, log *slog.Logger) {
	if t == nil {
		return
	}
	// The key is read from the daemon's environment now and kept only in
	// the node: the config holds its ${NAME}.
	key, err := endpoint.Expand(t.cfg.AuthKey, os.LookupEnv)
	if err != nil {
		t.early = fmt.Sprintf("tailnet: auth_key: %v in the daemon's environment", err)
		log.Error("the tailnet node is not started; everything else is served", logkey.Err, t.early)
		return
	}
	dir := t.cfg.State
	if dir == "" {
		dir = filepath.Join(t.stateDir, "tailnet")
	}
	t.node.Store(tailnet.Start(tailnet.Options{
		Hostname:   t.cfg.Hostname,
		AuthKey:    key,
		Dir:        dir,
		ControlURL: t.cfg.ControlURL,
		Handler:    dash,
		Identify:   web.WithTailnetLogin,
		Serve: func(ln net.Listener, h http.Handler) func(context.Context) error {
			srv := httpmcp.NewServer(h, log)
			go func() {
				if err := srv.Serve(httpmcp.LimitListener(ln, httpmcp.DefaultMaxConns())); err != nil && err != http.ErrServerClosed {
					log.Error("tailnet listener failed", logkey.Err, err)
				}
			}()
			return srv.Shutdown
		},
		Logger: log,
	}))
}

// info is daemon_info's tailnet_url and tailnet_error.
func (t *tailnetDoor) info() (string, string) {
	if n := t.node.Load(); n != nil {
		return n.Info()
	}
	if t.early != "" {
		return "", t.early
	}
	return "", "tailnet: not started: the dashboard is not served (see the daemon log)"
}

// url is the page's address on the tailnet, "" until the node is up.
func (t *tailnetDoor) url() string {
	if t == nil {
		return ""
	}
	u, _ := t.info()
	return u
}

// hosts are the node's names, for the dashboard's Host check.
func (t *tailnetDoor) hosts() []string {
	if n := t.node.Load(); n != nil {
		return n.Hosts()
	}
	return nil
}

func (t *tailnetDoor) close(ctx context.Context) error {
	if t == nil {
		return nil
	}
	if n := t.node.Load(); n != nil {
		return n.Close(ctx)
	}
	return nil
}

// tailnetUsers is the dashboard's view of [web.users], read at each
// request so a reload applies at once.
func tailnetUsers(ctl *control.Control) func(string) (api.Grant, bool) {
	return func(login string) (api.Grant, bool) {
		entries, ok := ctl.Config().Web.Users[login]
		if !ok {
			return api.Grant{}, false
		}
		g, err := api.ParseGrant(entries)
		return g, err == nil
	}
}

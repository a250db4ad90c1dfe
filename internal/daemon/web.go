package daemon

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/control"
	"github.com/harness-dev/harness/internal/mcp/httpmcp"
	"github.com/harness-dev/harness/internal/protocol"
	"github.com/harness-dev/harness/internal/supervise"
	"github.com/harness-dev/harness/internal/web"
)

// A viewer of a harness's terminal is the dashboard's too.
var _ web.Viewer = (*supervise.Viewer)(nil)

// webBackend is the dashboard's view of the daemon: control's operations
// and attach, the socket server's event fan-out, the operator grant.
type webBackend struct {
	ctl *control.Control
	srv *protocol.Server
}

func (b webBackend) Call(ctx context.Context, caller api.Caller, op string, args json.RawMessage) (any, error) {
	return b.ctl.Call(ctx, caller, op, args)
}

func (b webBackend) Attach(ctx context.Context, caller api.Caller, a api.AttachArgs) (web.Viewer, error) {
	v, err := b.ctl.AttachFor(ctx, caller, a)
	if err != nil {
		return nil, err // a typed nil *Viewer must not become a non-nil Viewer
	}
	return v, nil
}

func (b webBackend) Subscribe() (<-chan api.Event, func()) {
	return b.srv.Subscribe(protocol.DefaultEventBuffer)
}

func (b webBackend) OperatorGrant() api.Grant {
	return b.ctl.Config().Daemon.MCPHTTPOperatorAllow
}

// doors routes the HTTP listener: the MCP endpoint and the metrics to
// httpmcp, everything else to the dashboard (docs/design/web.md).
type doors struct {
	mcp, web http.Handler
}

func (d doors) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == httpmcp.Path || r.URL.Path == httpmcp.MetricsPath {
		d.mcp.ServeHTTP(w, r)
		return
	}
	d.web.ServeHTTP(w, r)
}

package session

import (
	"context"
	"time"

	"github.com/harness-dev/harness/internal/logkey"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FirstListWait bounds how long a session's first tools/list waits for
// upstreams that are still starting.
var FirstListWait = 10 * time.Second

const methodListTools = "tools/list"

// firstListMiddleware holds a session's first tools/list until the
// upstreams it may see have listed their tools (or failed), at most
// FirstListWait. A project's agent and its upstreams start together; a
// client that lists once at start and never again would otherwise not
// see their tools at all. Later lists answer at once: list_changed tells
// the client when more arrive.
func (l *live) firstListMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == methodListTools && l.m.ups != nil && l.listedOnce.CompareAndSwap(false, true) {
			wctx, cancel := context.WithTimeout(ctx, FirstListWait)
			begin := time.Now()
			l.m.ups.WaitStarting(wctx, l.project())
			cancel()
			if waited := time.Since(begin); waited > 100*time.Millisecond {
				l.m.log.Info("first tools/list waited for starting upstreams", logkey.Session, l.label(), logkey.Waited, waited.Round(time.Millisecond))
			}
			l.refresh()
		}
		return next(ctx, method, req)
	}
}

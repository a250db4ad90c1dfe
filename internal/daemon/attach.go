package daemon

import (
	"context"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/protocol"
	"github.com/harness-dev/harness/internal/supervise"
)

// A viewer of a harness's terminal is the socket's attach session as it is.
var _ protocol.AttachSession = (*supervise.Viewer)(nil)

// OpenAttach serves the socket's attach mode (`harness attach`) with the
// operator's authority, like every control-mode request: a viewer of the
// harness's terminal, or the refusal with its code.
func (h handler) OpenAttach(ctx context.Context, hello protocol.Hello) (protocol.AttachSession, error) {
	c := api.Caller{Kind: api.Operator}
	if hello.Via != "" {
		c.Door, c.Actor = api.DoorSSH, hello.Via
	}
	v, err := h.ctl.AttachFor(ctx, c, *hello.Attach)
	if err != nil {
		return nil, err // a typed nil *Viewer must not become a non-nil session
	}
	return v, nil
}

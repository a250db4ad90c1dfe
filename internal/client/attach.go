package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/protocol"
)

// Attachment is an attach-mode connection (`harness attach`): the
// harness's output and notices from the daemon, the viewer's keystrokes
// and terminal size to it. Recv is for one goroutine; Input, Resize and
// Close may be called from others.
type Attachment struct {
	nc  net.Conn
	br  *bufio.Reader
	wmu sync.Mutex
}

// DialAttach attaches to a harness's terminal. A refusal carries its code:
// unknown_harness, not_running (stopped or failed), invalid_argument (an
// upstream has no terminal), version_mismatch from a daemon that predates
// attach mode.
func DialAttach(ctx context.Context, socket string, a api.AttachArgs) (*Attachment, error) {
	nc, _, err := dial(ctx, socket, protocol.Hello{Mode: protocol.ModeAttach, Attach: &a})
	if err != nil {
		return nil, predatesAttach(socket, err)
	}
	return &Attachment{nc: nc, br: bufio.NewReader(nc)}, nil
}

// predatesAttach returns the daemon's refusal as it is (its message names
// the harness and why), and turns an older (pre-1.2) daemon's refusal of the unknown
// mode into a version mismatch that says what to do.
func predatesAttach(socket string, err error) error {
	var r *errcode.Remote
	if !errors.As(err, &r) {
		return err
	}
	if r.Code == errcode.InvalidArgument && strings.Contains(r.Message, `hello mode "`+protocol.ModeAttach+`"`) {
		return &errcode.Remote{Code: errcode.VersionMismatch, Message: fmt.Sprintf(
			"the daemon at %s does not serve attach, which needs protocol %s or later (it answered: %s); restart the daemon with this build",
			socket, protocol.AttachSince, r.Message)}
	}
	return r
}

// Recv returns the next output or notice. The stream ends with io.EOF
// after the api.AttachEnded notice or when the daemon goes away; an Error
// frame (input from a read-only viewer, say) is returned as the
// *errcode.Remote it carries.
func (a *Attachment) Recv() ([]byte, *api.AttachEvent, error) {
	t, payload, err := protocol.ReadFrame(a.br, protocol.MaxFrame)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
			return nil, nil, io.EOF
		}
		return nil, nil, fmt.Errorf("attach stream: %w", err)
	}
	switch t {
	case protocol.FrameOutput:
		return payload, nil, nil
	case protocol.FrameNotice:
		var ev api.AttachEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return nil, nil, fmt.Errorf("attach stream: bad notice %q: %w", payload, err)
		}
		return nil, &ev, nil
	case protocol.FrameError:
		return nil, nil, decodeRemote(payload)
	}
	return nil, nil, fmt.Errorf("attach stream: unexpected %s frame", t)
}

// Input sends keystrokes to the harness.
func (a *Attachment) Input(p []byte) error { return a.send(protocol.FrameInput, p) }

// Resize tells the daemon the viewer's terminal size.
func (a *Attachment) Resize(cols, rows int) error {
	payload, err := json.Marshal(api.AttachResize{Cols: cols, Rows: rows})
	if err != nil {
		return fmt.Errorf("attach: encode resize: %w", err)
	}
	return a.send(protocol.FrameResize, payload)
}

func (a *Attachment) send(t protocol.FrameType, payload []byte) error {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	if err := protocol.WriteFrame(a.nc, t, payload); err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	return nil
}

// Close ends the attachment (a Recv in progress returns io.EOF).
func (a *Attachment) Close() error {
	if err := a.nc.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("attach: close: %w", err)
	}
	return nil
}

// Package bridge is the remote side of `harness --host ssh://…`: `harness
// bridge [--grant CLASSES]` runs as an OpenSSH forced command, joins its
// stdio to the local control socket, and checks every operation it
// forwards against the key's grant (docs/design/remote.md). Nothing listens on the
// network: sshd authenticates the key, the bridge limits what it may do.
//
// The relay understands just enough of the socket protocol to judge: the
// Hello (its mode, and for attach whether the viewer may type), and in
// control mode each Request's op, whose class internal/api says. An MCP
// session through the bridge is unattributed and gets the grant itself
// (Hello.Grant); a stdio hand-off is never offered across SSH.
package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/protocol"
)

// HelloTimeout bounds the wait for the remote client's Hello.
const HelloTimeout = 10 * time.Second

// Serve relays one remote client, reading from in and writing to out (the
// forced command's stdin and stdout), to the daemon at socket, until
// either side ends. Operations grant does not cover are answered with
// not_permitted naming the class they need, and never reach the daemon.
// A refusal of the whole connection (a read-write attach without input,
// no daemon) is written to out as an Error frame before Serve returns it.
//
// via names the key for the daemon's audit log ("ssh:KEY-COMMENT").
func Serve(ctx context.Context, socket string, grant api.Grant, via string, in io.Reader, out io.Writer) error {
	w := &frameWriter{w: out}
	hello, err := readHello(ctx, in)
	if err != nil {
		return w.refuse(err)
	}
	hello.Via = via
	if err := admit(&hello, grant); err != nil {
		return w.refuse(err)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return w.refuse(fmt.Errorf("no harness daemon is running on this host (%s): %w", socket, errcode.ErrDaemonUnavailable))
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	payload, err := json.Marshal(hello)
	if err != nil {
		return fmt.Errorf("bridge: encode hello: %w", err)
	}
	if err := protocol.WriteFrame(nc, protocol.FrameHello, payload); err != nil {
		return w.refuse(fmt.Errorf("daemon at %s: %w: %w", socket, err, errcode.ErrDaemonUnavailable))
	}
	// The daemon's answer to the hello goes first: a client may have
	// pipelined a request behind its hello (client.CallOnce), and a
	// refusal written here must not overtake the welcome.
	t, answer, err := protocol.ReadFrame(nc, protocol.MaxFrame)
	if err != nil {
		return w.refuse(fmt.Errorf("daemon at %s closed the connection during the handshake: %w: %w", socket, err, errcode.ErrDaemonUnavailable))
	}
	if t == protocol.FrameWelcome && hello.Mode == protocol.ModeControl {
		answer = stampGrant(answer, grant)
	}
	if err := w.write(t, answer); err != nil || t != protocol.FrameWelcome {
		return err // a refusal of the hello is the daemon's to give; the client has it
	}
	if hello.Mode == protocol.ModeControl {
		return relayControl(nc, in, w, grant)
	}
	return relayBytes(nc, in, out)
}

// stampGrant adds the key's grant to the daemon's welcome, so the client
// knows what it may do before it tries; a welcome it cannot read passes
// as it came (the client judges it).
func stampGrant(welcome []byte, grant api.Grant) []byte {
	var w protocol.Welcome
	if json.Unmarshal(welcome, &w) != nil {
		return welcome
	}
	w.Bridged, w.Grant = true, grant.Strings()
	out, err := json.Marshal(w)
	if err != nil {
		return welcome
	}
	return out
}

// readHello reads the client's first frame, bounded by HelloTimeout.
func readHello(ctx context.Context, in io.Reader) (protocol.Hello, error) {
	type read struct {
		t       protocol.FrameType
		payload []byte
		err     error
	}
	got := make(chan read, 1)
	go func() {
		t, p, err := protocol.ReadFrame(in, protocol.MaxFrame)
		got <- read{t, p, err}
	}()
	var r read
	timer := time.NewTimer(HelloTimeout)
	defer timer.Stop()
	select {
	case r = <-got:
	case <-timer.C:
		return protocol.Hello{}, fmt.Errorf("no hello within %s: %w", HelloTimeout, errcode.ErrInvalidArgument)
	case <-ctx.Done():
		return protocol.Hello{}, ctx.Err()
	}
	if r.err != nil {
		return protocol.Hello{}, fmt.Errorf("read hello: %w: %w", r.err, errcode.ErrInvalidArgument)
	}
	if r.t != protocol.FrameHello {
		return protocol.Hello{}, fmt.Errorf("first frame is %s, want %s: %w", r.t, protocol.FrameHello, errcode.ErrInvalidArgument)
	}
	var h protocol.Hello
	if err := json.Unmarshal(r.payload, &h); err != nil {
		return protocol.Hello{}, fmt.Errorf("bad hello: %w: %w", err, errcode.ErrInvalidArgument)
	}
	return h, nil
}

// admit checks the connection as a whole against grant and rewrites the
// Hello the daemon will see: no token, no --allow-control and no stdio
// hand-off from across SSH; an MCP session carries the grant instead.
func admit(h *protocol.Hello, grant api.Grant) error {
	h.Token, h.AllowControl, h.Handoff, h.Grant = "", false, false, nil
	switch h.Mode {
	case protocol.ModeAttach:
		readOnly := h.Attach != nil && h.Attach.ReadOnly
		return permit(grant, api.OpAttach, api.AttachClass(readOnly), attachWhat(readOnly))
	case protocol.ModeMCP:
		h.Grant = grant.Strings()
	}
	return nil
}

func attachWhat(readOnly bool) string {
	if readOnly {
		return "a read-only attach"
	}
	return "a read-write attach"
}

// permit refuses what with not_permitted unless grant covers class c on
// the facade (the daemon's own operations).
func permit(grant api.Grant, op string, c api.Class, what string) error {
	if grant.Allows(api.FacadeNamespace, c) {
		return nil
	}
	return errcode.Errorf(errcode.NotPermitted, "%s is %s: needs %s; this SSH key's bridge grants %s", what, c, c, grantText(grant))
}

func grantText(g api.Grant) string {
	if g.Empty() {
		return "nothing"
	}
	return g.String()
}

// DrainGrace bounds how long the daemon's answers are still relayed once
// the remote client has stopped sending.
const DrainGrace = 5 * time.Second

// relayControl forwards control frames. Requests go to the daemon only
// when grant covers their op's class; a refused one is answered here, in
// order with the daemon's answers (one writer lock for out).
func relayControl(nc net.Conn, in io.Reader, w *frameWriter, grant api.Grant) error {
	down := func() error {
		for {
			t, payload, err := protocol.ReadFrame(nc, protocol.MaxFrame)
			if err != nil {
				return err
			}
			if err := w.write(t, payload); err != nil {
				return err
			}
		}
	}
	up := func() error {
		for {
			t, payload, err := protocol.ReadFrame(in, protocol.MaxFrame)
			if err != nil {
				return err
			}
			if t == protocol.FrameRequest {
				var req protocol.Request
				if err := json.Unmarshal(payload, &req); err != nil {
					return w.refuse(fmt.Errorf("bad request: %w: %w", err, errcode.ErrInvalidArgument))
				}
				if err := check(grant, req.Op, req.Args); err != nil {
					body := errcode.BodyOf(err)
					answer, _ := json.Marshal(protocol.Response{ID: req.ID, Error: &body})
					if err := w.write(protocol.FrameResponse, answer); err != nil {
						return err
					}
					continue
				}
			}
			if err := protocol.WriteFrame(nc, t, payload); err != nil {
				return err
			}
		}
	}
	return relay(nc, up, down)
}

// check judges one control operation. A pairing mints a credential: it
// may grant the device no class this key's grant lacks (an empty grant
// asks for the default, read and input).
func check(grant api.Grant, op string, args json.RawMessage) error {
	c, ok := api.ClassOf(op)
	if !ok {
		return errcode.Errorf(errcode.InvalidArgument, "unknown operation %s", errcode.Quote(op))
	}
	if err := permit(grant, op, c, "operation "+op); err != nil || op != api.OpPair {
		return err
	}
	var a api.PairArgs
	if len(args) > 0 {
		if err := json.Unmarshal(args, &a); err != nil {
			return errcode.Errorf(errcode.InvalidArgument, "pair: arguments: %v", err)
		}
	}
	want := a.Grant
	if len(want) == 0 {
		want = []string{string(api.Read), string(api.Input)}
	}
	for _, w := range want {
		wc, err := api.ParseClass(w)
		if err != nil {
			return errcode.Errorf(errcode.InvalidArgument, "pair: grant: %v", err)
		}
		if err := permit(grant, op, wc, "pairing a device with "+w); err != nil {
			return err
		}
	}
	return nil
}

// relayBytes copies an attach or MCP stream both ways: the daemon checks
// what flows in them (a read-only viewer's input, the MCP session's grant).
func relayBytes(nc net.Conn, in io.Reader, out io.Writer) error {
	return relay(nc,
		func() error { _, err := io.Copy(nc, in); return err },
		func() error { _, err := io.Copy(out, nc); return err })
}

// relay runs up (client to daemon) and down (daemon to client) until down
// ends. When the client stops sending, the daemon is told (a half-close)
// and its answers still flow for DrainGrace. up may stay blocked on the
// client's stdin after relay returns: the process is about to exit.
func relay(nc net.Conn, up, down func() error) error {
	upDone, downDone := make(chan error, 1), make(chan error, 1)
	go func() { upDone <- up() }()
	go func() { downDone <- down() }()
	select {
	case err := <-downDone:
		nc.Close()
		return endOf(err)
	case err := <-upDone:
		if err = endOf(err); err != nil {
			nc.Close()
			<-downDone
			return err
		}
	}
	if uc, ok := nc.(*net.UnixConn); ok {
		_ = uc.CloseWrite()
	}
	t := time.NewTimer(DrainGrace)
	defer t.Stop()
	select {
	case err := <-downDone:
		nc.Close()
		return endOf(err)
	case <-t.C:
		nc.Close()
		<-downDone
		return nil
	}
}

// endOf is nil for the ordinary end of a stream.
func endOf(err error) error {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// frameWriter serialises whole frames to the remote client.
type frameWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (f *frameWriter) write(t protocol.FrameType, payload []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return protocol.WriteFrame(f.w, t, payload)
}

// refuse tells the client why the connection ends (an Error frame with
// err's code) and returns err.
func (f *frameWriter) refuse(err error) error {
	body, _ := json.Marshal(errcode.BodyOf(err))
	if werr := f.write(protocol.FrameError, body); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

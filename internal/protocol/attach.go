package protocol

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
)

// AttachSession is one viewer of a harness's terminal (docs/design/terminals.md), opened
// by the Handler for an attach-mode Hello.
type AttachSession interface {
	// Next waits until output or a notice is due, or ctx ends. The first
	// are the api.AttachAttached notice and a repaint of the screen; after
	// the last notice (api.AttachEnded) it returns io.EOF.
	Next(ctx context.Context) (output []byte, notice *api.AttachEvent, err error)
	// Input types keystrokes into the harness; a read-only viewer's input
	// is refused with not_permitted.
	Input(ctx context.Context, p []byte) error
	// Resize resizes the harness's PTY to the viewer's terminal; refused
	// with not_permitted for a read-only viewer.
	Resize(ctx context.Context, cols, rows int) error
	// Close detaches the viewer.
	Close()
}

// Attacher is the Handler capability behind attach mode. OpenAttach runs
// before the Welcome, so a refusal (an unknown harness, one that is not
// running, an upstream) reaches the client as an Error frame with its code.
type Attacher interface {
	OpenAttach(ctx context.Context, hello Hello) (AttachSession, error)
}

// maxOutputFrame bounds the payload of one output frame; a longer output
// (a repaint of a huge screen) goes in several.
const maxOutputFrame = 1 << 20

// openAttach opens the session of an attach-mode Hello, or rejects it.
func (c *conn) openAttach(h Hello) bool {
	a, ok := c.s.Handler.(Attacher)
	if !ok {
		c.reject(errcode.InvalidArgument, "this daemon does not serve attach")
		return false
	}
	if h.Attach == nil || h.Attach.Name == "" {
		c.reject(errcode.InvalidArgument, "attach mode needs the harness to attach to (hello.attach.name)")
		return false
	}
	sess, err := a.OpenAttach(WithHello(c.ctx, h), h)
	if err != nil {
		c.reject(errcode.Of(err), err.Error())
		return false
	}
	c.attach = sess
	return true
}

// serveAttach pumps the session's output and notices to the viewer and its
// input and resizes to the session, until the unit ends (the last notice
// is sent, then the connection closes), the viewer goes away, or the
// server shuts down.
func (c *conn) serveAttach(ctx context.Context) {
	defer c.attach.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		c.pumpAttach(ctx)
		// The stream is over (or the viewer stopped reading): closing ends
		// the read loop below too.
		c.close()
	}()
	c.readAttach(ctx)
	cancel()
	<-pumped
}

// pumpAttach writes what the session has for the viewer. A write that
// times out closes the connection (conn.write), so a viewer whose socket
// is stuck is disconnected; one that is merely slow is repainted by the
// session instead of queueing without bound.
func (c *conn) pumpAttach(ctx context.Context) {
	for {
		out, ev, err := c.attach.Next(ctx)
		if err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				c.s.logger().Warn("protocol: attach stream failed", logkey.Conn, c.id, logkey.Err, err)
			}
			return
		}
		if ev != nil {
			if c.notice(*ev) != nil || ev.Kind == api.AttachEnded {
				return
			}
			continue
		}
		for len(out) > 0 {
			n := min(len(out), maxOutputFrame)
			if err := c.write(FrameOutput, out[:n]); err != nil {
				c.s.logger().Debug("protocol: attach output not delivered", logkey.Conn, c.id, logkey.Err, err)
				return
			}
			out = out[n:]
		}
	}
}

// notice sends one notice frame.
func (c *conn) notice(ev api.AttachEvent) error {
	payload, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("conn %d: encode notice: %w", c.id, err)
	}
	if err := c.write(FrameNotice, payload); err != nil {
		c.s.logger().Debug("protocol: attach notice not delivered", logkey.Conn, c.id, logkey.Kind, ev.Kind, logkey.Err, err)
		return err
	}
	return nil
}

// readAttach takes the viewer's input and resize frames. Input that cannot
// be delivered (between two runs, or to a program that does not read) is
// told to the viewer as a notice and the stream goes on; input or a
// resize from a read-only viewer is a violation that ends it.
func (c *conn) readAttach(ctx context.Context) {
	br := bufio.NewReader(c.nc)
	for {
		t, payload, err := ReadFrame(br, c.s.maxFrame())
		if err != nil {
			c.frameError("attach read", err)
			return
		}
		switch t {
		case FrameInput:
			err = c.attach.Input(ctx, payload)
		case FrameResize:
			var r api.AttachResize
			if jerr := json.Unmarshal(payload, &r); jerr != nil || r.Cols <= 0 || r.Rows <= 0 {
				c.reject(errcode.InvalidArgument, fmt.Sprintf("bad resize frame %q", payload))
				return
			}
			err = c.attach.Resize(ctx, r.Cols, r.Rows)
		default:
			c.reject(errcode.InvalidArgument, fmt.Sprintf("unexpected %s frame in attach mode", t))
			return
		}
		switch {
		case err == nil:
		case errcode.Of(err) == errcode.NotPermitted:
			c.reject(errcode.NotPermitted, err.Error())
			return
		case t == FrameInput:
			c.s.logger().Info("protocol: attach input not delivered", logkey.Conn, c.id, logkey.Err, err)
			if c.notice(api.AttachEvent{Kind: api.AttachNotice, Message: "input not delivered: " + err.Error()}) != nil {
				return
			}
		default:
			// A resize between two runs has no PTY to reach; the next run
			// starts at the configured size.
			c.s.logger().Debug("protocol: attach resize not applied", logkey.Conn, c.id, logkey.Err, err)
		}
	}
}

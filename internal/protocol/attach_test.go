package protocol_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/protocol"
)

// attachHandler adds attach mode to fakeHandler: "ghost" is unknown,
// "stopped" not running; any other name gets a scripted session.
type attachHandler struct {
	*fakeHandler
	mu       sync.Mutex
	sessions []*fakeSession
	opened   chan *fakeSession
}

func newAttachHandler() *attachHandler {
	return &attachHandler{fakeHandler: newFake(), opened: make(chan *fakeSession, 4)}
}

func (h *attachHandler) OpenAttach(_ context.Context, hello protocol.Hello) (protocol.AttachSession, error) {
	switch hello.Attach.Name {
	case "ghost":
		return nil, errcode.Errorf(errcode.UnknownHarness, "no harness named %q", "ghost")
	case "stopped":
		return nil, fmt.Errorf("attach stopped: not running: %w", errcode.ErrNotRunning)
	}
	s := &fakeSession{args: *hello.Attach, items: make(chan item, 16), input: make(chan string, 16),
		resize: make(chan [2]int, 16), closed: make(chan struct{})}
	h.mu.Lock()
	h.sessions = append(h.sessions, s)
	h.mu.Unlock()
	h.opened <- s
	return s, nil
}

type item struct {
	out []byte
	ev  *api.AttachEvent
}

// fakeSession hands out what the test queues on items; "fail" as input
// is refused like input between two runs.
type fakeSession struct {
	args      api.AttachArgs
	items     chan item
	input     chan string
	resize    chan [2]int
	closed    chan struct{}
	closeOnce sync.Once
}

func (s *fakeSession) Next(ctx context.Context) ([]byte, *api.AttachEvent, error) {
	select {
	case it := <-s.items:
		return it.out, it.ev, nil
	case <-s.closed:
		return nil, nil, io.EOF
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

func (s *fakeSession) Input(_ context.Context, p []byte) error {
	if s.args.ReadOnly {
		return errcode.Errorf(errcode.NotPermitted, "read-only viewer")
	}
	if string(p) == "fail" {
		return fmt.Errorf("input: not running: %w", errcode.ErrNotRunning)
	}
	s.input <- string(p)
	return nil
}

func (s *fakeSession) Resize(_ context.Context, cols, rows int) error {
	if s.args.ReadOnly {
		return errcode.Errorf(errcode.NotPermitted, "read-only viewer")
	}
	s.resize <- [2]int{cols, rows}
	return nil
}

func (s *fakeSession) Close() { s.closeOnce.Do(func() { close(s.closed) }) }

func (r *raw) attach(args api.AttachArgs) {
	r.t.Helper()
	r.send(protocol.FrameHello, protocol.Hello{Proto: protocol.Version, Mode: protocol.ModeAttach, Attach: &args})
}

func (r *raw) notice() api.AttachEvent {
	r.t.Helper()
	ft, p := r.read()
	if ft != protocol.FrameNotice {
		r.t.Fatalf("got %s frame %q, want notice", ft, p)
	}
	var ev api.AttachEvent
	if err := json.Unmarshal(p, &ev); err != nil {
		r.t.Fatal(err)
	}
	return ev
}

func TestAttach_RefusalsAreErrorFramesWithTheirCode(t *testing.T) {
	h := newAttachHandler()
	sock, _ := startServer(t, h, nil)
	for name, code := range map[string]errcode.Code{"ghost": errcode.UnknownHarness, "stopped": errcode.NotRunning, "": errcode.InvalidArgument} {
		r := dialRaw(t, sock)
		r.attach(api.AttachArgs{Name: name})
		r.expectErrorThenClose(code)
	}
	// A daemon whose handler does not attach says so.
	plain, _ := startServer(t, newFake(), nil)
	r := dialRaw(t, plain)
	r.attach(api.AttachArgs{Name: "web"})
	if b := r.expectErrorThenClose(errcode.InvalidArgument); b.Message != "this daemon does not serve attach" {
		t.Fatalf("message %q", b.Message)
	}
}

func TestAttach_OutputNoticesInputAndResizeFlow(t *testing.T) {
	h := newAttachHandler()
	sock, _ := startServer(t, h, nil)
	r := dialRaw(t, sock)
	r.attach(api.AttachArgs{Name: "web", Cols: 80, Rows: 24})
	if ft, p := r.read(); ft != protocol.FrameWelcome {
		t.Fatalf("got %s %s", ft, p)
	}
	s := <-h.opened
	if s.args != (api.AttachArgs{Name: "web", Cols: 80, Rows: 24}) {
		t.Fatalf("session args %+v", s.args)
	}
	s.items <- item{ev: &api.AttachEvent{Kind: api.AttachAttached, Name: "web", RunID: 3}}
	big := bytes.Repeat([]byte("y"), 1<<20+10) // more than one output frame
	s.items <- item{out: big}
	if ev := r.notice(); ev.Kind != api.AttachAttached || ev.RunID != 3 {
		t.Fatalf("notice %+v", ev)
	}
	var got []byte
	for len(got) < len(big) {
		ft, p := r.read()
		if ft != protocol.FrameOutput {
			t.Fatalf("got %s frame", ft)
		}
		got = append(got, p...)
	}
	if !bytes.Equal(got, big) {
		t.Fatalf("output of %d bytes came back as %d", len(big), len(got))
	}

	r.sendBytes(protocol.FrameInput, []byte("ls\r"))
	if in := <-s.input; in != "ls\r" {
		t.Fatalf("input %q", in)
	}
	r.send(protocol.FrameResize, api.AttachResize{Cols: 100, Rows: 30})
	if sz := <-s.resize; sz != [2]int{100, 30} {
		t.Fatalf("resize %v", sz)
	}
	// Input that cannot be delivered is a notice; the stream goes on.
	r.sendBytes(protocol.FrameInput, []byte("fail"))
	if ev := r.notice(); ev.Kind != api.AttachNotice || !bytes.Contains([]byte(ev.Message), []byte("not running")) {
		t.Fatalf("notice %+v", ev)
	}
	// The end: the last notice, then the connection closes and the
	// session is closed.
	s.items <- item{ev: &api.AttachEvent{Kind: api.AttachEnded, State: "stopped", Message: "exited with code 0"}}
	if ev := r.notice(); ev.Kind != api.AttachEnded || ev.State != "stopped" {
		t.Fatalf("notice %+v", ev)
	}
	if _, _, err := protocol.ReadFrame(r.nc, protocol.MaxFrame); !errors.Is(err, io.EOF) {
		t.Fatalf("after the end: %v", err)
	}
	<-s.closed
}

func TestAttach_ReadOnlyViewerThatTypesIsCutOff(t *testing.T) {
	h := newAttachHandler()
	sock, _ := startServer(t, h, nil)
	for _, frame := range []struct {
		t protocol.FrameType
		p string
	}{{protocol.FrameInput, "x"}, {protocol.FrameResize, `{"cols":10,"rows":5}`}} {
		r := dialRaw(t, sock)
		r.attach(api.AttachArgs{Name: "web", ReadOnly: true})
		r.read() // welcome
		s := <-h.opened
		r.sendBytes(frame.t, []byte(frame.p))
		r.expectErrorThenClose(errcode.NotPermitted)
		<-s.closed
	}
	// Frames of other modes are violations too.
	r := dialRaw(t, sock)
	r.attach(api.AttachArgs{Name: "web"})
	r.read()
	<-h.opened
	r.send(protocol.FrameRequest, protocol.Request{ID: 1, Op: "echo"})
	r.expectErrorThenClose(errcode.InvalidArgument)
}

// A viewer that goes away ends its session.
func TestAttach_ViewerGoneClosesTheSession(t *testing.T) {
	h := newAttachHandler()
	sock, _ := startServer(t, h, nil)
	r := dialRaw(t, sock)
	r.attach(api.AttachArgs{Name: "web"})
	r.read()
	s := <-h.opened
	r.nc.Close()
	<-s.closed
}

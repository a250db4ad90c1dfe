package attachterm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseDetachKeys(t *testing.T) {
	for in, want := range map[string]string{"C-]": "\x1d", "C-a,d": "\x01d", "c-Z": "\x1a", "C-@": "\x00", "q": "q", "C-\\,C-_": "\x1c\x1f"} {
		got, err := ParseDetachKeys(in)
		if err != nil || string(got) != want {
			t.Errorf("ParseDetachKeys(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "C-", "C-1", "ab", "Enter", "C-a,", " "} {
		if _, err := ParseDetachKeys(bad); errcode.Of(err) != errcode.InvalidArgument {
			t.Errorf("ParseDetachKeys(%q): %v", bad, err)
		}
	}
}

// fakeStream is the daemon's side: items the test queues, input and
// resizes it records.
type fakeStream struct {
	items  chan item
	mu     sync.Mutex
	input  bytes.Buffer
	sizes  [][2]int
	closed chan struct{}
	once   sync.Once
}

type item struct {
	out []byte
	ev  *api.AttachEvent
}

func newStream() *fakeStream {
	return &fakeStream{items: make(chan item, 16), closed: make(chan struct{})}
}

func (s *fakeStream) Recv() ([]byte, *api.AttachEvent, error) {
	select {
	case it, ok := <-s.items:
		if !ok {
			return nil, nil, io.EOF
		}
		return it.out, it.ev, nil
	case <-s.closed:
		return nil, nil, io.EOF
	}
}

func (s *fakeStream) Input(p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.input.Write(p)
	return nil
}

func (s *fakeStream) Resize(c, r int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sizes = append(s.sizes, [2]int{c, r})
	return nil
}

func (s *fakeStream) Close() error { s.once.Do(func() { close(s.closed) }); return nil }

func (s *fakeStream) typed() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.input.String()
}

// screen is a terminal's output side for tests.
type screen struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *screen) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *screen) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func size80x24() (int, int, error) { return 80, 24, nil }

// TestRun_DetachKeysAreHeldBackAndEndTheAttachment: keys go to the
// stream except the detach sequence; a broken sequence is sent whole; the
// modes the program left on are turned off on the way out.
func TestRun_DetachKeysAreHeldBackAndEndTheAttachment(t *testing.T) {
	keysR, keysW := io.Pipe()
	defer keysR.Close()
	s := newStream()
	var scr screen
	winch := make(chan os.Signal, 1)
	done := make(chan Outcome, 1)
	go func() {
		out, err := run(context.Background(), keysR, &scr, size80x24, s, Options{Name: "web", Detach: []byte("\x01d")}, winch)
		if err != nil {
			t.Errorf("run: %v", err)
		}
		done <- out
	}()
	s.items <- item{out: []byte("\x1b[?1049hhello")}
	s.items <- item{ev: &api.AttachEvent{Kind: api.AttachRestarted, RunID: 7}}
	eventually(t, "restart notice", func() bool { return strings.Contains(scr.String(), "[harness: web restarted: run 7]") })
	winch <- unix.SIGWINCH
	keysW.Write([]byte("ls\x01x\r"))
	eventually(t, "typed keys", func() bool { return s.typed() == "ls\x01x\r" })
	keysW.Write([]byte("\x01"))
	keysW.Write([]byte("d"))
	out := <-done
	if !out.Detached || out.Ended != nil {
		t.Fatalf("outcome %+v", out)
	}
	if got := s.typed(); got != "ls\x01x\r" {
		t.Fatalf("typed %q: the detach keys leaked", got)
	}
	s.mu.Lock()
	sizes := s.sizes
	s.mu.Unlock()
	if len(sizes) != 2 || sizes[0] != [2]int{80, 24} {
		t.Fatalf("sizes sent %v, want one after the restart and one on SIGWINCH", sizes)
	}
	if got := scr.String(); !strings.HasPrefix(got, "\x1b[?1049hhello") || !strings.Contains(got, "\x1b[?1049l\x1b[m\x1b[?25h\x1b[?2004l") {
		t.Fatalf("screen %q", got)
	}
	keysW.Close()
}

// TestRun_EndedUnitEndsTheAttachment: the last notice ends Run with it;
// a read-only viewer sends neither keys nor sizes.
func TestRun_EndedUnitEndsTheAttachment(t *testing.T) {
	keysR, keysW := io.Pipe()
	s := newStream()
	var scr screen
	winch := make(chan os.Signal, 1)
	done := make(chan Outcome, 1)
	go func() {
		out, err := run(context.Background(), keysR, &scr, size80x24, s, Options{Name: "web", ReadOnly: true}, winch)
		if err != nil {
			t.Errorf("run: %v", err)
		}
		done <- out
	}()
	keysW.Write([]byte("rm -rf /\r"))
	winch <- unix.SIGWINCH
	s.items <- item{out: []byte("screen")}
	s.items <- item{ev: &api.AttachEvent{Kind: api.AttachEnded, State: "stopped", Message: "exited with code 0"}}
	close(s.items)
	out := <-done
	if out.Detached || out.Ended == nil || out.Ended.State != "stopped" {
		t.Fatalf("outcome %+v", out)
	}
	if s.typed() != "" || len(s.sizes) != 0 {
		t.Fatalf("a read-only viewer sent %q and sizes %v", s.typed(), s.sizes)
	}
	if got := scr.String(); strings.Contains(got, "\x1b[?1049l") || !strings.HasPrefix(got, "screen") {
		t.Fatalf("screen %q", got)
	}
	keysW.Close()
	keysR.Close()
}

func TestModeTrackerSeesSequencesSplitAcrossWrites(t *testing.T) {
	var m modeTracker
	m.see([]byte("abc\x1b[?10"))
	m.see([]byte("49hxyz"))
	if !m.alt {
		t.Fatal("split ?1049h missed")
	}
	m.see([]byte("\x1b[?1049l\x1b[?1049h\x1b[?47l"))
	if m.alt {
		t.Fatal("the last switch wins")
	}
}

// TestTerminal_RawModeSizeAndRestore: on a real PTY, Open refuses what is
// not a terminal, Raw switches the modes, Size reads the window, Close
// puts the modes back and ends a pending Read.
func TestTerminal_RawModeSizeAndRestore(t *testing.T) {
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := Open(r, slave); errcode.Of(err) != errcode.InvalidArgument || !strings.Contains(err.Error(), "needs a terminal") {
		t.Fatalf("Open on a pipe: %v", err)
	}
	if err := pty.Setsize(master, &pty.Winsize{Cols: 91, Rows: 33}); err != nil {
		t.Fatal(err)
	}
	term, err := Open(slave, slave)
	if err != nil {
		t.Fatal(err)
	}
	if err := term.Raw(); err != nil {
		t.Fatal(err)
	}
	modes, err := unix.IoctlGetTermios(int(slave.Fd()), ioctlGetTermios)
	if err != nil {
		t.Fatal(err)
	}
	if modes.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) != 0 {
		t.Fatalf("raw mode left lflag %#x", modes.Lflag)
	}
	if c, r, err := term.Size(); err != nil || c != 91 || r != 33 {
		t.Fatalf("size %dx%d %v", c, r, err)
	}
	master.Write([]byte("k"))
	buf := make([]byte, 8)
	if n, err := term.Read(buf); err != nil || string(buf[:n]) != "k" {
		t.Fatalf("read %q %v", buf[:n], err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := term.Read(buf)
		read <- err
	}()
	if err := term.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-read; !errors.Is(err, os.ErrClosed) {
		t.Fatalf("pending read after Close: %v", err)
	}
	modes, err = unix.IoctlGetTermios(int(slave.Fd()), ioctlGetTermios)
	if err != nil || modes.Lflag&(unix.ICANON|unix.ECHO) != unix.ICANON|unix.ECHO {
		t.Fatalf("modes not restored: %#x %v", modes.Lflag, err)
	}
}

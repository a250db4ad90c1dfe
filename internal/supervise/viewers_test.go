package supervise

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/term"
)

// runInputHelper is the child side of the input and attach tests. Modes:
//
//	keys   raw mode; with $HELPER_PASTE=1 turn on bracketed paste; print
//	       "ready", then a line "got %q" per read of its terminal
//	deaf   raw mode, print "ready", never read the terminal
//	flood  print $HELPER_N lines of 100 bytes, then "flood done", sleep
func runInputHelper(mode string) (int, bool) {
	switch mode {
	case "keys", "deaf":
		if err := rawStdin(); err != nil {
			fmt.Println("raw:", err)
			return 3, true
		}
		if os.Getenv("HELPER_PASTE") == "1" {
			os.Stdout.WriteString("\x1b[?2004h")
		}
		os.Stdout.WriteString("ready\r\n")
		if mode == "deaf" {
			break
		}
		buf := make([]byte, 4096)
		for {
			n, err := os.Stdin.Read(buf)
			if err != nil {
				return 0, true
			}
			fmt.Printf("got %q\r\n", buf[:n])
		}
	case "pastedraw":
		return pasteDrawHelper()
	case "flood":
		n, _ := strconv.Atoi(os.Getenv("HELPER_N"))
		w := bufio.NewWriter(os.Stdout)
		line := strings.Repeat("x", 90)
		for i := range n {
			fmt.Fprintf(w, "%08d %s\n", i, line)
		}
		w.WriteString("flood done\n")
		w.Flush()
	default:
		return 0, false
	}
	time.Sleep(time.Hour)
	return 0, true
}

// rawStdin puts the terminal on stdin into raw mode, as a TUI does.
func rawStdin() error {
	t, err := unix.IoctlGetTermios(0, ioctlGetTermios)
	if err != nil {
		return err
	}
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	return unix.IoctlSetTermios(0, ioctlSetTermios, t)
}

// next reads the viewer's next item within a bound.
func next(t *testing.T, v *Viewer) ([]byte, *api.AttachEvent, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return v.Next(ctx)
}

// readUntil reads the viewer's output until it contains want and returns
// everything read; a notice on the way fails the test.
func readUntil(t *testing.T, v *Viewer, want string) string {
	t.Helper()
	var b strings.Builder
	for !strings.Contains(b.String(), want) {
		out, ev, err := next(t, v)
		if err != nil || ev != nil {
			t.Fatalf("waiting for %q: notice %+v, err %v; read so far %q", want, ev, err, b.String())
		}
		b.Write(out)
	}
	return b.String()
}

func attach(t *testing.T, u *Unit, o ViewerOptions) *Viewer {
	t.Helper()
	v, err := u.Attach(context.Background(), o)
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	t.Cleanup(v.Close)
	return v
}

// TestScenario_AttachRepaintsThenStreamsAndTypes: a viewer's first reads
// are the attached notice and a repaint of what the screen shows, then
// live output; its input reaches the program; a read-only viewer sees the
// same and can neither type nor resize.
func TestScenario_AttachRepaintsThenStreamsAndTypes(t *testing.T) {
	cfg := helperCfg("keys", "keys", nil)
	cfg.Cols, cfg.Rows = 80, 16 // the writer's 90x20 is larger: it applies
	e := newEnv(t, cfg)
	if _, err := e.u.Attach(context.Background(), ViewerOptions{}); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("attach before start: %v", err)
	}
	e.start()
	e.waitFor("ready on the screen", func() bool { return e.u.Term().Snapshot(term.SnapshotOptions{}).Lines[0] == "ready" })

	v := attach(t, e.u, ViewerOptions{Cols: 90, Rows: 20})
	ro := attach(t, e.u, ViewerOptions{ReadOnly: true, Cols: 50, Rows: 10})
	_, ev, err := next(t, v)
	if err != nil || ev == nil || ev.Kind != api.AttachAttached || ev.Name != "keys" || ev.RunID == 0 || ev.Cols != 90 || ev.Rows != 20 {
		t.Fatalf("first item: %+v, %v", ev, err)
	}
	out, ev, err := next(t, v)
	if err != nil || ev != nil || !strings.HasPrefix(string(out), "\x1b[m\x1b[H\x1b[2J") || !strings.Contains(string(out), "ready") {
		t.Fatalf("repaint: %q %+v %v", out, ev, err)
	}
	// The read-only viewer did not resize: the size it was told is the writer's.
	if _, ev, _ := next(t, ro); ev == nil || ev.Cols != 90 || ev.Rows != 20 {
		t.Fatalf("read-only viewer's notice %+v", ev)
	}
	readUntil(t, ro, "ready")

	if err := v.Input(context.Background(), []byte("hi\x01")); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("got %q", "hi\x01")
	readUntil(t, v, want)
	readUntil(t, ro, want)
	if err := ro.Input(context.Background(), []byte("x")); errcode.Of(err) != errcode.NotPermitted {
		t.Fatalf("read-only input: %v", err)
	}
	if err := ro.Resize(context.Background(), 40, 10); errcode.Of(err) != errcode.NotPermitted {
		t.Fatalf("read-only resize: %v", err)
	}
	if c, r := e.u.Term().Size(); c != 90 || r != 20 {
		t.Fatalf("size after the read-only viewer's resize %dx%d", c, r)
	}
	if n := e.u.Viewers(); n != 2 {
		t.Fatalf("viewers %d", n)
	}
}

// TestScenario_ViewersFollowARestartAndEndWithAStop: a restart keeps the
// viewer with a notice naming the new run; a stop ends it with the state.
func TestScenario_ViewersFollowARestartAndEndWithAStop(t *testing.T) {
	e := newEnv(t, helperCfg("keys", "keys", nil))
	e.start()
	v := attach(t, e.u, ViewerOptions{})
	if _, ev, _ := next(t, v); ev == nil || ev.Kind != api.AttachAttached {
		t.Fatalf("first notice %+v", ev)
	}
	first := e.u.Status().RunID
	if err := e.u.Restart(context.Background(), api.CauseManual); err != nil {
		t.Fatal(err)
	}
	var restarted *api.AttachEvent
	for restarted == nil {
		_, ev, err := next(t, v)
		if err != nil {
			t.Fatal(err)
		}
		if ev != nil {
			if ev.Kind != api.AttachRestarted {
				t.Fatalf("notice %+v during a restart", ev)
			}
			restarted = ev
		}
	}
	if restarted.RunID == first || restarted.RunID != e.u.Status().RunID {
		t.Fatalf("restarted %+v, first run %d, now %d", restarted, first, e.u.Status().RunID)
	}
	readUntil(t, v, "ready")
	e.stop()
	for {
		_, ev, err := next(t, v)
		if err != nil {
			t.Fatalf("no ended notice: %v", err)
		}
		if ev != nil {
			if ev.Kind != api.AttachEnded || ev.State != string(StateStopped) || !strings.Contains(ev.Message, "SIGTERM") {
				t.Fatalf("ended notice %+v", ev)
			}
			break
		}
	}
	if _, _, err := next(t, v); !errors.Is(err, io.EOF) {
		t.Fatalf("after the end: %v", err)
	}
	if n := e.u.Viewers(); n != 0 {
		t.Fatalf("viewers after the end: %d", n)
	}
	if _, err := e.u.Attach(context.Background(), ViewerOptions{}); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("attach after stop: %v", err)
	}
}

// TestScenario_ASlowViewerNeverHoldsTheProgram: a viewer that reads
// nothing while the program prints far more than the lag bound does not
// slow the program down; its backlog is dropped and its next read is a
// repaint of the screen as it is now.
func TestScenario_ASlowViewerNeverHoldsTheProgram(t *testing.T) {
	const lag = 64 << 10 // MaxViewerLag scaled down: the emulator is slow under -race
	const lines = 3 * lag / 100
	e := newEnv(t, helperCfg("flood", "flood", map[string]string{"HELPER_N": strconv.Itoa(lines)}))
	e.u.out.mu.Lock()
	e.u.out.maxLag = lag
	e.u.out.mu.Unlock()
	e.start()
	v := attach(t, e.u, ViewerOptions{ReadOnly: true})
	start := time.Now()
	// While v reads nothing. (The screen, not the log: scanning thousands
	// of entries at every append would be the slow part of this test.)
	e.waitFor("flood done on the screen", func() bool {
		return slices.Contains(e.u.Term().Snapshot(term.SnapshotOptions{}).Lines, "flood done")
	})
	t.Logf("%d bytes printed in %v", lines*100, time.Since(start))
	if _, ev, _ := next(t, v); ev == nil || ev.Kind != api.AttachAttached {
		t.Fatalf("first notice %+v", ev)
	}
	var got strings.Builder
	for !strings.Contains(got.String(), "flood done") {
		out, ev, err := next(t, v)
		if err != nil || ev != nil {
			t.Fatalf("%+v %v", ev, err)
		}
		got.Write(out)
	}
	// The repaint shows the last lines of the flood at the bottom; the
	// backlog in between is gone.
	if n := got.Len(); n > 2*lag {
		t.Fatalf("viewer got %d bytes: the backlog was not dropped", n)
	}
	if s := got.String(); !strings.Contains(s, "\x1b[H\x1b[2J") || !strings.Contains(s, fmt.Sprintf("%08d", lines-1)) {
		t.Fatalf("no repaint with the last line in %d bytes", len(s))
	}
}

// TestScenario_InputToAProgramThatDoesNotReadIsBounded: typing into a
// program that never reads gives up with an error, and the unit's actor
// stays responsive meanwhile.
func TestScenario_InputToAProgramThatDoesNotReadIsBounded(t *testing.T) {
	const timeout = 700 * time.Millisecond // Limits.InputTimeout, shortened: the default would make the test wait 5 s
	e := newEnv(t, helperCfg("deaf", "deaf", nil), func(d *Deps) { d.Limits.InputTimeout = timeout })
	if _, err := e.u.Input(context.Background(), []byte("x")); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("input before start: %v", err)
	}
	e.start()
	e.waitFor("ready on the screen", func() bool { return e.u.Term().Snapshot(term.SnapshotOptions{}).Lines[0] == "ready" })
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), timeout/2) // the caller's deadline comes first
	defer cancel()
	go func() {
		_, err := e.u.Input(ctx, make([]byte, 1<<20))
		done <- err
	}()
	// The actor answers while the write is parked.
	if err := e.u.Resize(context.Background(), 80, 20); err != nil {
		t.Fatalf("resize while input waits: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "bytes written") {
			t.Fatalf("input to a deaf program: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("input to a program that does not read never returned")
	}
	// Without a deadline of the caller's, Limits.InputTimeout bounds the write.
	start := time.Now()
	_, err := e.u.Input(context.Background(), make([]byte, 1<<20))
	if took := time.Since(start); err == nil || !strings.Contains(err.Error(), "did not read its terminal within "+timeout.String()) ||
		took < timeout || took > 5*timeout {
		t.Fatalf("input to a deaf program without a deadline: %v after %v", err, took)
	}
	e.stop()
	if _, err := e.u.Input(context.Background(), []byte("x")); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("input after stop: %v", err)
	}
}

// TestInputToAnUpstreamIsInvalid: an upstream has no terminal.
func TestInputToAnUpstreamIsInvalid(t *testing.T) {
	cfg := helperCfg("up", "echo", nil)
	cfg.Kind = KindUpstream
	e := newEnv(t, cfg)
	if _, err := e.u.Input(context.Background(), []byte("x")); errcode.Of(err) != errcode.InvalidArgument {
		t.Fatalf("input to an upstream: %v", err)
	}
	if _, err := e.u.Attach(context.Background(), ViewerOptions{}); errcode.Of(err) != errcode.InvalidArgument {
		t.Fatalf("attach to an upstream: %v", err)
	}
}

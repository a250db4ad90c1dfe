package nowait

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/fdtest"
)

// within fails the test when f has not returned after d: a call that
// waits where it must not.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s waited: want an answer at once", what)
	}
}

// blockingPipe is a pipe whose two descriptions are in blocking mode, as
// a parent hands one to a child. The test is skipped on a kernel whose
// pipes cannot be read without waiting (before Linux 5.x; CI's can).
func blockingPipe(t *testing.T) (r, w int) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(p[0]); _ = unix.Close(p[1]) })
	if _, err := Read(uintptr(p[0]), make([]byte, 1)); err == ErrUnsupported {
		t.Skip("this kernel's pipes have no RWF_NOWAIT")
	}
	return p[0], p[1]
}

func TestScenario_ABlockingPipeWithNothingToReadIsNotWaitedFor(t *testing.T) {
	r, w := blockingPipe(t)
	buf := make([]byte, 64)
	within(t, 5*time.Second, "a read of an empty blocking pipe", func() {
		if n, err := Read(uintptr(r), buf); n != 0 || err != unix.EAGAIN {
			t.Errorf("Read = %d, %v; want 0, EAGAIN", n, err)
		}
	})
	if _, err := unix.Write(w, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if n, err := Read(uintptr(r), buf); err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("Read = %q, %v; want hello", buf[:n], err)
	}
	_ = unix.Close(w)
	if n, err := Read(uintptr(r), buf); n != 0 || err != nil {
		t.Fatalf("Read at the end = %d, %v; want 0, nil", n, err)
	}
}

func TestScenario_AFullBlockingPipeIsNotWaitedFor(t *testing.T) {
	_, w := blockingPipe(t)
	chunk := bytes.Repeat([]byte("x"), 4096)
	total := 0
	within(t, 5*time.Second, "writes to a full blocking pipe", func() {
		for range 1 << 10 { // a pipe holds 64 KiB unless told otherwise
			n, err := Write(uintptr(w), chunk)
			total += n
			if err == unix.EAGAIN {
				return
			}
			if err != nil {
				t.Errorf("Write: %v", err)
				return
			}
		}
		t.Errorf("wrote %d bytes and never heard EAGAIN", total)
	})
	if total == 0 {
		t.Fatal("nothing was written to an empty pipe")
	}
}

// WriteNow writes what fits and says how much when the rest does not.
func TestScenario_WriteNowStopsAtAFullPipeSayingHowMuchItWrote(t *testing.T) {
	r, w := blockingPipe(t)
	big := bytes.Repeat([]byte("x"), 1<<20) // more than a pipe holds
	var n int
	var err error
	within(t, 5*time.Second, "WriteNow to a blocking pipe", func() { n, err = WriteNow(uintptr(w), big, false) })
	if err != unix.EAGAIN || n == 0 || n >= len(big) {
		t.Fatalf("WriteNow = %d, %v; want part of %d bytes and EAGAIN", n, err, len(big))
	}
	in, ierr := unix.IoctlGetInt(r, unix.TIOCINQ)
	if ierr != nil || in != n {
		t.Fatalf("the pipe holds %d bytes (%v); WriteNow said %d", in, ierr, n)
	}
}

// A terminal cannot be written with RWF_NOWAIT: WriteNow says so before
// writing anything, and plain writes it (in non-blocking mode) instead.
func TestScenario_WriteNowWritesATerminalPlainly(t *testing.T) {
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptm.Close()
	defer tty.Close()
	fd := int(tty.Fd()) // Fd makes it blocking: non-blocking again below
	if err := unix.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	if n, err := WriteNow(uintptr(fd), []byte("first"), false); n != 0 || err != ErrUnsupported {
		t.Fatalf("WriteNow to a terminal = %d, %v; want 0, ErrUnsupported", n, err)
	}
	if n, err := WriteNow(uintptr(fd), []byte("plainly\n"), true); n != len("plainly\n") || err != nil {
		t.Fatalf("WriteNow plain = %d, %v", n, err)
	}
	buf := make([]byte, 64)
	if n, err := ptm.Read(buf); err != nil || !bytes.Contains(buf[:n], []byte("plainly")) || bytes.Contains(buf[:n], []byte("first")) {
		t.Fatalf("the terminal read %q, %v; want plainly and nothing of the refused write", buf[:n], err)
	}
}

func TestScenario_AReaderReadsAStreamToItsEnd(t *testing.T) {
	blockingPipe(t) // skips where pipes cannot be read without waiting
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	nr := NewReader(r)
	if _, ok := nr.(*Reader); !ok {
		t.Fatalf("NewReader(*os.File) = %T, want *Reader", nr)
	}
	want := bytes.Repeat([]byte("0123456789abcdef"), 40000) // past the pipe's 64 KiB: the reader parks between
	go func() {
		_, _ = NewWriter(w).Write(want)
		_ = w.Close()
	}()
	got, err := io.ReadAll(nr)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, %v; want the %d written, then EOF", len(got), err, len(want))
	}
	if nr.(*Reader).usual {
		t.Fatal("a pipe was read the usual way: RWF_NOWAIT unsupported here?")
	}
}

func TestScenario_ClosingAWaitingReaderSaysClosedAsAFileDoes(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	nr := NewReader(r)
	errc := make(chan error, 1)
	go func() {
		_, err := nr.Read(make([]byte, 16))
		errc <- err
	}()
	// The read parks in the poller; Close wakes it whenever it got there.
	time.Sleep(20 * time.Millisecond)
	_ = r.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, os.ErrClosed) {
			t.Fatalf("Read after Close = %v, want os.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a waiting Read")
	}
}

func TestScenario_ADeadlineEndsAWaitingRead(t *testing.T) {
	a, _ := fdtest.SocketPair(t)
	nr := NewReader(a)
	if _, ok := nr.(*Reader); !ok {
		t.Fatalf("NewReader(net.Conn) = %T, want *Reader", nr)
	}
	_ = a.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := nr.Read(make([]byte, 16))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline = %v, want os.ErrDeadlineExceeded", err)
	}
}

func TestScenario_ASocketIsReadAndWrittenWithoutWaiting(t *testing.T) {
	a, b := fdtest.SocketPair(t)
	nr, nw := NewReader(a), NewWriter(b)
	if _, err := nw.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, err := nr.Read(buf)
	if err != nil || string(buf[:n]) != "ping\n" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	if nr.(*Reader).usual || nw.(*Writer).usual {
		t.Fatal("a socket went the usual way")
	}
}

// A terminal cannot be read without waiting: the Reader reads it the
// usual way, and nothing is lost.
func TestScenario_ATerminalIsReadTheUsualWay(t *testing.T) {
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptm.Close()
	defer tty.Close()
	if _, err := tty.Write([]byte("typed\n")); err != nil {
		t.Fatal(err)
	}
	nr := NewReader(ptm)
	buf := make([]byte, 64)
	n, err := nr.Read(buf)
	if err != nil || !bytes.Contains(buf[:n], []byte("typed")) {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	if !nr.(*Reader).usual {
		t.Fatal("a terminal was read with RWF_NOWAIT: the fallback is untested")
	}
}

func TestScenario_AStreamWithoutADescriptorIsLeftAsItIs(t *testing.T) {
	var b bytes.Buffer
	if NewReader(&b) != io.Reader(&b) || NewWriter(&b) != io.Writer(&b) {
		t.Fatal("a bytes.Buffer was wrapped")
	}
}

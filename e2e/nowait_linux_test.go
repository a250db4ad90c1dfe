//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/fdtest"
	"github.com/harness-dev/harness/internal/nowait"
)

// threadsIn counts pid's threads asleep in a kernel function whose name
// contains fn ("pipe_read", "pipe_write"; anon_pipe_read and
// anon_pipe_write on 6.x kernels): each is a thread some session's reader
// or writer holds in the kernel.
func threadsIn(t *testing.T, pid int, fn string) int {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", pid))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, w := range tasks {
		if b, err := os.ReadFile(w); err == nil && strings.Contains(string(b), fn) {
			n++
		}
	}
	return n
}

// blockedPipeThreadsAreSeen is the checks' positive control: a thread of
// this process blocked reading an empty pipe, then one blocked writing a
// full one, are counted by threadsIn (a kernel without wchan names would
// make the checks pass whatever the daemon did). It also needs pipes that
// can be read without waiting (Linux 5.x and later; CI's kernel has them).
func blockedPipeThreadsAreSeen(t *testing.T) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	if _, err := nowait.Read(uintptr(p[0]), make([]byte, 1)); err == nowait.ErrUnsupported {
		t.Skip("this kernel's pipes cannot be read with RWF_NOWAIT: the daemon reads them the usual way")
	}
	seen := func(fn string, release func()) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for threadsIn(t, os.Getpid(), fn) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("a thread blocked in a pipe is not seen in /proc/*/task/*/wchan as %s: the check would prove nothing", fn)
			}
			time.Sleep(10 * time.Millisecond)
		}
		release()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = unix.Read(p[0], make([]byte, 1)) // blocking: asleep in the kernel until the write below
	}()
	seen("pipe_read", func() { _, _ = unix.Write(p[1], []byte{1}) })
	<-done
	filled := make([]byte, 1<<20)
	_ = unix.SetNonblock(p[1], true)
	n, _ := unix.Write(p[1], filled) // fill it: what a pipe holds
	_ = unix.SetNonblock(p[1], false)
	done = make(chan struct{})
	go func() {
		defer close(done)
		_, _ = unix.Write(p[1], []byte{1}) // blocking: asleep until the read below makes room
	}()
	seen("pipe_write", func() {
		for got := 0; got < n; {
			m, err := unix.Read(p[0], filled)
			if err != nil {
				t.Error(err)
				return
			}
			got += m
		}
	})
	<-done
}

// handedSession is one `harness mcp` whose stdio is a pair of pipes the
// test holds the other ends of, handed over to the daemon.
type handedSession struct {
	io  *fdtest.Stdio
	out *bufio.Reader
}

func startHandedSession(t *testing.T, f *fleet) handedSession {
	t.Helper()
	p := fdtest.StdioPipes(t) // the child's ends blocking, as a parent hands them over
	cmd := exec.Command(harnessBin, "mcp", "--socket", f.Socket)
	cmd.Env = append(os.Environ(), "HARNESS_MCP_TOKEN=", "HARNESS_MCP_HANDOFF=1")
	cmd.Stdin, cmd.Stdout = p.InR, p.OutW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.InW.Close(); _ = cmd.Wait() })
	s := handedSession{io: p, out: bufio.NewReader(p.OutR)}
	s.ping(t, 1)
	if !fdtest.Nonblocking(t, p.InR) {
		t.Fatal("the hand-off left stdin blocking: the test proves nothing")
	}
	return s
}

// ping sends a ping and reads its answer.
func (s handedSession) ping(t *testing.T, id int) {
	t.Helper()
	if _, err := fmt.Fprintf(s.io.InW, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", id); err != nil {
		t.Fatal(err)
	}
	s.answer(t, id)
}

// answer reads the next line and wants it the answer to id.
func (s handedSession) answer(t *testing.T, id int) {
	t.Helper()
	_ = s.io.OutR.SetReadDeadline(time.Now().Add(20 * time.Second))
	line, err := s.out.ReadString('\n')
	if err != nil || !strings.Contains(line, fmt.Sprintf(`"id":%d,"result"`, id)) {
		t.Fatalf("answer to %d: %q, %v", id, line, err)
	}
}

// pipeHolds is how many bytes are in the pipe f reads.
func pipeHolds(t *testing.T, f *os.File) int {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if cerr := rc.Control(func(fd uintptr) { n, err = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); cerr != nil || err != nil {
		t.Fatal(cerr, err) // TIOCINQ is FIONREAD
	}
	return n
}

// noneBlockedIn fails the test if, within d, any of the daemon's threads
// sleeps in fn. A thread that blocks does so right after the request that
// led it there; d is far more than that takes.
func noneBlockedIn(t *testing.T, pid int, fn, what string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if n := threadsIn(t, pid, fn); n > 0 {
			t.Fatalf("%d of the daemon's threads are asleep in %s (%s): want none", n, fn, what)
		}
	}
}

// TestScenario_AClientThatMakesItsStdinBlockingHoldsNoDaemonThread:
// the hand-off shares the client's open file descriptions with the
// daemon, so whoever else holds one (the agent, a wrapper script) may
// clear O_NONBLOCK on it mid-session. The daemon's reads ask the kernel
// not to wait (internal/nowait), so a session whose stdin turned blocking
// still parks in the runtime's poller between requests, as every other
// session does, instead of holding one of the daemon's threads asleep in
// the kernel: a fleet of such agents cost a thread each before.
func TestScenario_AClientThatMakesItsStdinBlockingHoldsNoDaemonThread(t *testing.T) {
	blockedPipeThreadsAreSeen(t)
	f := newFleet(t, "")
	const sessions = 12
	var all []handedSession
	for range sessions {
		all = append(all, startHandedSession(t, f))
	}
	// Every session's description turns blocking, then each serves one
	// more request: its reader reads it and goes back to waiting for the
	// next one on a blocking description.
	for i, s := range all {
		fdtest.SetBlocking(t, s.io.InR)
		s.ping(t, 2+i)
	}
	noneBlockedIn(t, f.Cmd.Process.Pid, "pipe_read", fmt.Sprintf("%d sessions on blocking stdin", sessions), 2*time.Second)
	// And the sessions still answer.
	for i, s := range all {
		s.ping(t, 100+i)
	}
}

// TestScenario_AClientThatStopsReadingItsBlockingStdoutHoldsNoDaemonThread:
// the same for the answers. A client whose stdout
// description another holder made blocking, and who stops reading, used
// to hold a daemon thread asleep in pipe_write for as long as it did not
// read; the daemon's writes now wait in the poller.
func TestScenario_AClientThatStopsReadingItsBlockingStdoutHoldsNoDaemonThread(t *testing.T) {
	blockedPipeThreadsAreSeen(t)
	f := newFleet(t, "")
	s := startHandedSession(t, f)
	// Whatever happens below, the session can end: the daemon holds the
	// client's EOF until every answer it owes is written.
	t.Cleanup(func() { go func() { _, _ = io.Copy(io.Discard, s.io.OutR) }() })
	fdtest.SetBlocking(t, s.io.OutW)
	// Requests whose answers fill the stdout pipe several times over,
	// written while nobody reads an answer.
	const pings = 5000
	wrote := make(chan error, 1)
	go func() {
		var err error
		for i := range pings {
			if _, err = fmt.Fprintf(s.io.InW, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", 1000+i); err != nil {
				break
			}
		}
		wrote <- err
	}()
	// Synchronise on the pipe being full: what it holds stops growing
	// below 64 KiB only when the daemon has nothing more to write.
	deadline := time.Now().Add(20 * time.Second)
	for {
		n := pipeHolds(t, s.io.OutR)
		if n >= 60<<10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the answers never filled the client's stdout (%d bytes in it)", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	noneBlockedIn(t, f.Cmd.Process.Pid, "pipe_write", "a client that stopped reading its blocking stdout", 2*time.Second)
	// Reading again, the client gets every answer (the go-sdk answers
	// requests as each is done, not in order).
	answered := map[string]bool{}
	for range pings {
		_ = s.io.OutR.SetReadDeadline(time.Now().Add(20 * time.Second))
		line, err := s.out.ReadString('\n')
		var a struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err != nil || json.Unmarshal([]byte(line), &a) != nil || a.Result == nil {
			t.Fatalf("after %d answers: %q, %v", len(answered), line, err)
		}
		answered[string(a.ID)] = true
	}
	for i := range pings {
		if !answered[fmt.Sprint(1000+i)] {
			t.Fatalf("ping %d was never answered", 1000+i)
		}
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
}

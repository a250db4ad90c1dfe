package main

import (
	"bufio"
	"fmt"
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

// pipeReaders counts the daemon's threads asleep in a pipe read: each is
// a thread some session's reader holds in the kernel.
func pipeReaders(t *testing.T, pid int) int {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", pid))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, w := range tasks {
		// pipe_read, or anon_pipe_read on 6.x kernels.
		if b, err := os.ReadFile(w); err == nil && strings.Contains(string(b), "pipe_read") {
			n++
		}
	}
	return n
}

// pipeReadersAreSeen is the check's positive control: a thread of this
// process blocked reading a pipe is counted by pipeReaders (a kernel
// without wchan names would make the check pass whatever the daemon did).
// It also needs pipes that can be read without waiting (Linux 5.x and
// later; CI's kernel has them).
func pipeReadersAreSeen(t *testing.T) {
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
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = unix.Read(p[0], make([]byte, 1)) // blocking: asleep in the kernel until the write below
	}()
	deadline := time.Now().Add(10 * time.Second)
	for pipeReaders(t, os.Getpid()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a thread blocked reading a pipe is not seen in /proc/*/task/*/wchan: the check would prove nothing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := unix.Write(p[1], []byte{1}); err != nil {
		t.Fatal(err)
	}
	<-done
}

// TestScenario_AClientThatMakesItsStdinBlockingHoldsNoDaemonThread (issue
// 35): the hand-off shares the client's open file descriptions with the
// daemon, so whoever else holds one (the agent, a wrapper script) may
// clear O_NONBLOCK on it mid-session. The daemon's reads ask the kernel
// not to wait (internal/nowait), so a session whose stdin turned blocking
// still parks in the runtime's poller between requests, as every other
// session does, instead of holding one of the daemon's threads asleep in
// the kernel: a fleet of such agents cost a thread each before.
func TestScenario_AClientThatMakesItsStdinBlockingHoldsNoDaemonThread(t *testing.T) {
	pipeReadersAreSeen(t)
	f := newFleet(t, "")
	daemon := f.Cmd.Process.Pid
	const sessions = 12
	type sess struct {
		io  *fdtest.Stdio
		out *bufio.Reader
		cmd *exec.Cmd
	}
	ping := func(s sess, id int) {
		t.Helper()
		if _, err := fmt.Fprintf(s.io.InW, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", id); err != nil {
			t.Fatal(err)
		}
		_ = s.io.OutR.SetReadDeadline(time.Now().Add(20 * time.Second))
		line, err := s.out.ReadString('\n')
		if err != nil || !strings.Contains(line, fmt.Sprintf(`"id":%d,"result"`, id)) {
			t.Fatalf("ping %d answered %q, %v", id, line, err)
		}
	}
	var all []sess
	for range sessions {
		p := fdtest.StdioPipes(t) // the child's ends blocking, as a parent hands them over
		cmd := exec.Command(harnessBin, "mcp", "--socket", f.Socket)
		cmd.Env = append(os.Environ(), "HARNESS_MCP_TOKEN=", "HARNESS_MCP_HANDOFF=1")
		cmd.Stdin, cmd.Stdout = p.InR, p.OutW
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		s := sess{io: p, out: bufio.NewReader(p.OutR), cmd: cmd}
		all = append(all, s)
		t.Cleanup(func() { _ = p.InW.Close(); _ = cmd.Wait() })
		ping(s, 1)
		if !fdtest.Nonblocking(t, p.InR) {
			t.Fatal("the hand-off left stdin blocking: the test proves nothing")
		}
	}
	// Every session's description turns blocking, then each serves one
	// more request: its reader reads it and goes back to waiting for the
	// next one on a blocking description.
	for i, s := range all {
		fdtest.SetBlocking(t, s.io.InR)
		ping(s, 2+i)
	}
	// A reader that blocks in the kernel does so right after its answer
	// is written; two seconds is far more than that takes.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if n := pipeReaders(t, daemon); n > 0 {
			t.Fatalf("%d of the daemon's threads are asleep reading a pipe (%d sessions on blocking stdin): want none", n, sessions)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// And the sessions still answer.
	for i, s := range all {
		ping(s, 100+i)
	}
}

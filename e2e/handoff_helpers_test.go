//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/fdtest"
)

// bridgeModes are the two ways `harness mcp` serves a session: its stdio
// handed to the daemon (the default), or the byte pipe
// (HARNESS_MCP_HANDOFF=0). Tests of behaviour both must keep loop over them.
var bridgeModes = []struct {
	name string
	env  string
}{
	{"handoff", "HARNESS_MCP_HANDOFF=1"},
	{"pipe", "HARNESS_MCP_HANDOFF=0"},
}

// bridgeProc is one `harness mcp` started as an agent starts it: blocking
// pipes for stdin and stdout. The test keeps the child's ends open too, to
// read their blocking mode and identity.
type bridgeProc struct {
	t                    *testing.T
	cmd                  *exec.Cmd
	inR, inW, outR, outW *os.File
	out                  *bufio.Reader
	stderrFile           string
	exited               chan struct{}
}

// startBridge runs `harness mcp` on socket with env added.
func startBridge(t *testing.T, socket string, env ...string) *bridgeProc {
	t.Helper()
	p := fdtest.StdioPipes(t)
	b := &bridgeProc{t: t, exited: make(chan struct{}), inR: p.InR, inW: p.InW, outR: p.OutR, outW: p.OutW}
	b.out = bufio.NewReader(b.outR)
	b.cmd = exec.Command(harnessBin, "mcp", "--socket", socket)
	b.cmd.Env = append(os.Environ(), append([]string{"HARNESS_MCP_TOKEN=", "HARNESS_SOCKET="}, env...)...)
	b.stderrFile = filepath.Join(t.TempDir(), "stderr")
	stderr, err := os.Create(b.stderrFile)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close() // the child has its own
	b.cmd.Stdin, b.cmd.Stdout, b.cmd.Stderr = b.inR, b.outW, stderr
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = b.cmd.Wait(); close(b.exited) }()
	t.Cleanup(func() { // before StdioPipes closes the pipes
		_ = b.cmd.Process.Kill()
		<-b.exited
	})
	return b
}

// stderr is what the bridge wrote to stderr so far.
func (b *bridgeProc) stderr() string {
	out, _ := os.ReadFile(b.stderrFile)
	return string(out)
}

// send writes lines to the bridge's stdin.
func (b *bridgeProc) send(lines ...string) {
	b.t.Helper()
	if _, err := b.inW.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		b.t.Fatalf("write to harness mcp: %v", err)
	}
}

// line reads one line of the bridge's stdout.
func (b *bridgeProc) line() string {
	b.t.Helper()
	_ = b.outR.SetReadDeadline(time.Now().Add(20 * time.Second))
	s, err := b.out.ReadString('\n')
	if err != nil {
		b.t.Fatalf("read from harness mcp: %v (stderr %q)", err, b.stderr())
	}
	return s
}

// The handshake a script writes to harness mcp: initialize (id 0), then
// initialized.
const (
	initializeLine  = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`
	initializedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// initialize does the handshake and reads initialize's answer.
func (b *bridgeProc) initialize() {
	b.t.Helper()
	b.send(initializeLine, initializedLine)
	if got := b.line(); !strings.Contains(got, `"id":0,"result"`) {
		b.t.Fatalf("initialize answered %q", got)
	}
}

// ping checks the session answers.
func (b *bridgeProc) ping(id int) {
	b.t.Helper()
	b.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
	if got := b.line(); !strings.Contains(got, fmt.Sprintf(`"id":%d,"result"`, id)) {
		b.t.Fatalf("ping %d answered %q", id, got)
	}
}

// exit waits for the bridge to exit and returns its exit code.
func (b *bridgeProc) exit(within time.Duration) int {
	b.t.Helper()
	select {
	case <-b.exited:
	case <-time.After(within):
		b.t.Fatalf("harness mcp still running after %s (stderr %q)", within, b.stderr())
	}
	return b.cmd.ProcessState.ExitCode()
}

// blocking fails the test if the child's stdio was left nonblocking.
func (b *bridgeProc) blocking() {
	b.t.Helper()
	if fdtest.Nonblocking(b.t, b.inR) || fdtest.Nonblocking(b.t, b.outW) {
		b.t.Fatal("harness mcp's stdio left nonblocking")
	}
}

// holds reports whether process pid has f's pipe or socket open.
func holds(t *testing.T, pid int, f *os.File) bool {
	t.Helper()
	var st syscall.Stat_t
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Control(func(fd uintptr) { err = syscall.Fstat(int(fd), &st) }); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		if err == nil && strings.HasSuffix(link, fmt.Sprintf(":[%d]", st.Ino)) {
			return true
		}
	}
	return false
}

// streamFDs counts the sockets and pipes pid holds: what a session uses.
// Files come and go on their own (a /proc scan, a log rotation), so they
// would make a leak check flaky without telling anything about sessions.
func streamFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		if strings.HasPrefix(l, "socket:") || strings.HasPrefix(l, "pipe:") {
			n++
		}
	}
	return n
}

// openFDs counts the open descriptors of pid.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

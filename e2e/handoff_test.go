//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/harness-dev/harness/internal/fdtest"
)

// TestMCP_HandoffTakesTheBridgeOutOfTheDataPath: with the
// hand-off the daemon itself holds the agent's pipes and serves the session
// on them; with HARNESS_MCP_HANDOFF=0 it never sees them (the bridge
// copies bytes). Either way, closing stdin ends the session with exit 0,
// the daemon lets go of the pipes and their blocking mode is as the agent
// left it.
func TestMCP_HandoffTakesTheBridgeOutOfTheDataPath(t *testing.T) {
	f := newFleet(t, "")
	daemon := f.Cmd.Process.Pid
	for _, mode := range bridgeModes {
		t.Run(mode.name, func(t *testing.T) {
			b := startBridge(t, f.Socket, mode.env)
			b.ping(1)
			handed := mode.name == "handoff"
			for name, p := range map[string]*os.File{"stdin": b.inR, "stdout": b.outW} {
				if got := holds(t, daemon, p); got != handed {
					t.Errorf("daemon holds the agent's %s: %t, want %t", name, got, handed)
				}
			}
			if handed && (!fdtest.Nonblocking(t, b.inR) || !fdtest.Nonblocking(t, b.outW)) {
				t.Error("the daemon does not poll the agent's stdio")
			}
			b.ping(2)
			b.inW.Close()
			if code := b.exit(10 * time.Second); code != 0 {
				t.Fatalf("exit %d after stdin ended (stderr %q)", code, b.stderr())
			}
			if holds(t, daemon, b.inR) || holds(t, daemon, b.outW) {
				t.Error("the daemon still holds the agent's stdio after the session")
			}
			b.blocking()
			if b.stderr() != "" {
				t.Errorf("stderr %q, want nothing", b.stderr())
			}
		})
	}
}

// TestMCP_SignalsEndTheSessionCleanly: SIGTERM, SIGINT and SIGHUP to
// `harness mcp` end the session in either mode: exit 0, the daemon lets
// go of the agent's stdio, whose blocking mode is as the agent left it.
func TestMCP_SignalsEndTheSessionCleanly(t *testing.T) {
	f := newFleet(t, "")
	for _, mode := range bridgeModes {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
			t.Run(mode.name+"/"+sig.String(), func(t *testing.T) {
				b := startBridge(t, f.Socket, mode.env)
				b.ping(1)
				if err := b.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				if code := b.exit(10 * time.Second); code != 0 {
					t.Fatalf("exit %d after %s (stderr %q)", code, sig, b.stderr())
				}
				if holds(t, f.Cmd.Process.Pid, b.inR) || holds(t, f.Cmd.Process.Pid, b.outW) {
					t.Error("the daemon still holds the agent's stdio")
				}
				b.blocking()
			})
		}
	}
}

// TestMCP_TerminalStdinFallsBackToTheBytePipe: a terminal cannot be
// handed over (the daemon is in no session of it), so `harness mcp` run by
// hand copies bytes as before, and a signal still ends it cleanly.
func TestMCP_TerminalStdinFallsBackToTheBytePipe(t *testing.T) {
	f := newFleet(t, "")
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer tty.Close()
	go func() { _, _ = io.Copy(io.Discard, master) }() // the terminal's echo
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	defer outW.Close()
	cmd := exec.Command(harnessBin, "mcp", "--socket", f.Socket)
	cmd.Env = append(os.Environ(), "HARNESS_MCP_TOKEN=", "HARNESS_MCP_HANDOFF=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, outW, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if _, err := io.WriteString(master, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	_ = outR.SetReadDeadline(time.Now().Add(20 * time.Second))
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":1,"result"`) {
		t.Fatalf("ping through a terminal: %q, %v", line, err)
	}
	if holds(t, f.Cmd.Process.Pid, outW) {
		t.Fatal("stdout was handed over although stdin is a terminal")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
}

// TestMCP_MalformedLineIsAnsweredAndTheSessionGoesOn: a line
// that is not JSON-RPC gets a parse error with id null; the calls before
// and after it are answered, and the bridge exits 0 when stdin ends.
// Before, the session ended silently at the bad line and lost the answers
// already due.
func TestMCP_MalformedLineIsAnsweredAndTheSessionGoesOn(t *testing.T) {
	f := newFleet(t, sleeperConfig)
	for _, mode := range bridgeModes {
		t.Run(mode.name, func(t *testing.T) {
			b := startBridge(t, f.Socket, mode.env)
			b.send(
				initializeLine,
				initializedLine,
				`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"harness_list","arguments":{}}}`,
				`this is not json`,
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"harness_describe","arguments":{"name":"sleeper"}}}`,
			)
			b.inW.Close()
			if code := b.exit(20 * time.Second); code != 0 {
				t.Fatalf("exit %d (stderr %q)", code, b.stderr())
			}
			b.outW.Close()
			out, err := io.ReadAll(b.out)
			if err != nil {
				t.Fatal(err)
			}
			results, parseErrors := map[string]bool{}, 0
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				var resp struct {
					ID     json.RawMessage `json:"id"`
					Result json.RawMessage `json:"result"`
					Error  *struct {
						Code int `json:"code"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(line), &resp); err != nil {
					t.Fatalf("output line %q: %v", line, err)
				}
				switch {
				case string(resp.ID) == "null" && resp.Error != nil && resp.Error.Code == -32700:
					parseErrors++
				case resp.Result != nil:
					results[string(resp.ID)] = true
				default:
					t.Fatalf("unexpected answer %s", line)
				}
			}
			if parseErrors != 1 || !results["0"] || !results["1"] || !results["2"] {
				t.Fatalf("got results %v and %d parse errors, want 0, 1, 2 and one:\n%s", results, parseErrors, out)
			}
		})
	}
}

// TestMCP_DaemonLossIsAnErrorWithAMessage: when the daemon is
// killed or stops during a session, `harness mcp` exits non-zero and says
// what happened, instead of exiting 0 with nothing on stderr; its stdio is
// blocking again.
func TestMCP_DaemonLossIsAnErrorWithAMessage(t *testing.T) {
	for _, mode := range bridgeModes {
		for _, how := range []string{"killed", "stopped"} {
			t.Run(mode.name+"/"+how, func(t *testing.T) {
				f := newFleet(t, "")
				b := startBridge(t, f.Socket, mode.env)
				b.ping(1)
				if how == "killed" {
					f.kill()
				} else {
					f.Stop()
				}
				code := b.exit(10 * time.Second)
				msg := b.stderr()
				if code == 0 || !strings.Contains(msg, "daemon") || !strings.Contains(msg, f.Socket) {
					t.Fatalf("exit %d, stderr %q: want non-zero and a message naming the daemon", code, msg)
				}
				if how == "stopped" && mode.name == "handoff" && !strings.Contains(msg, "shutting down") {
					t.Errorf("stderr %q does not say the daemon is shutting down", msg)
				}
				b.blocking()
			})
		}
	}
}

// TestMCP_OneSocketForStdinAndStdout: an agent that gives `harness mcp`
// one socket as stdin and stdout (socat EXEC:, inetd) is served on it; its
// half-close is stdin's end, the answer still comes, and the socket is
// blocking again afterwards.
func TestMCP_OneSocketForStdinAndStdout(t *testing.T) {
	f := newFleet(t, "")
	for _, mode := range bridgeModes {
		t.Run(mode.name, func(t *testing.T) {
			agent, stdio := fdtest.SocketPairFiles(t)
			cmd := exec.Command(harnessBin, "mcp", "--socket", f.Socket)
			cmd.Env = append(os.Environ(), "HARNESS_MCP_TOKEN=", mode.env)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio, stdio, os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			conn, err := net.FileConn(agent)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"); err != nil {
				t.Fatal(err)
			}
			if err := conn.(*net.UnixConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			line, err := bufio.NewReader(conn).ReadString('\n')
			if err != nil || !strings.Contains(line, `"id":1,"result"`) {
				t.Fatalf("agent got %q, %v", line, err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("harness mcp: %v", err)
			}
			if fdtest.Nonblocking(t, stdio) {
				t.Fatal("the socket was left nonblocking")
			}
		})
	}
}

// TestMCP_OldCLIHelloGetsTheBytePipe: a CLI older than the hand-off says
// hello in protocol 1.0 without offering it; the daemon serves it as
// before, over the socket.
func TestMCP_OldCLIHelloGetsTheBytePipe(t *testing.T) {
	f := newFleet(t, "")
	c, err := net.Dial("unix", f.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	writeFrame(t, c, 1, []byte(`{"proto":"1.0","mode":"mcp","client":"harness[1]"}`))
	if typ, payload := readFrame(t, c); typ != 2 || bytes.Contains(payload, []byte("handoff")) {
		t.Fatalf("got frame %d %s, want a welcome without the hand-off", typ, payload)
	}
	if _, err := io.WriteString(c, `{"jsonrpc":"2.0","id":7,"method":"ping"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":7,"result"`) {
		t.Fatalf("ping over the byte stream: %q, %v", line, err)
	}
}

// sessionsForLeakCheck is how many sessions the descriptor check opens:
// 300, 100 ended each way. A descriptor left by sessions ended one way
// shows as 100 or more; 2,000 sessions took 150 s under -race.
const sessionsForLeakCheck = 300

// TestMCP_SessionsLeaveNoDescriptorsInTheDaemon: 300
// handed-off sessions, ended every way an agent ends one (stdin closed,
// SIGTERM, SIGKILL of `harness mcp`), leave the daemon's descriptor count
// where it started.
func TestMCP_SessionsLeaveNoDescriptorsInTheDaemon(t *testing.T) {
	f := newFleet(t, "")
	daemon := f.Cmd.Process.Pid
	if err := leakCheckSession(f.Socket, 0); err != nil { // the daemon's first session may open lazily
		t.Fatal(err)
	}
	before := streamFDs(t, daemon)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for i := next.Add(1); i <= sessionsForLeakCheck; i = next.Add(1) {
				if err := leakCheckSession(f.Socket, int(i)); err != nil {
					errs <- fmt.Errorf("session %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// The last sessions' teardown in the daemon may trail the bridges
	// killed with SIGKILL by a moment. A leak is more descriptors than
	// before; fewer is one the daemon had open at the start and closed
	// since (seen once in CI: 3 after, 4 before).
	deadline := time.Now().Add(15 * time.Second)
	for streamFDs(t, daemon) > before {
		if time.Now().After(deadline) {
			links := []string{}
			ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", daemon))
			for _, e := range ents {
				l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", daemon, e.Name()))
				links = append(links, e.Name()+"->"+l)
			}
			t.Fatalf("daemon has %d sockets and pipes after %d sessions, %d before:\n%s",
				streamFDs(t, daemon), sessionsForLeakCheck, before, strings.Join(links, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leakCheckSession runs one handed-off session: a ping answered, then the
// end that i selects.
func leakCheckSession(socket string, i int) error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer inR.Close()
	defer inW.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer outR.Close()
	defer outW.Close()
	for _, p := range []*os.File{inR, outW} { // as a parent hands them over
		raw, err := p.SyscallConn()
		if err != nil {
			return err
		}
		if cerr := raw.Control(func(fd uintptr) { err = syscall.SetNonblock(int(fd), false) }); cerr != nil || err != nil {
			return fmt.Errorf("set blocking: %v %v", cerr, err)
		}
	}
	cmd := exec.Command(harnessBin, "mcp", "--socket", socket)
	cmd.Env = append(os.Environ(), "HARNESS_MCP_TOKEN=", "HARNESS_MCP_HANDOFF=1")
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	_ = outR.SetReadDeadline(time.Now().Add(20 * time.Second))
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil || !strings.Contains(line, fmt.Sprintf(`"id":%d,"result"`, i)) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("ping answered %q, %v (stderr %q)", line, err, stderr.String())
	}
	switch i % 3 {
	case 0:
		_ = inW.Close()
	case 1:
		_ = cmd.Process.Signal(syscall.SIGTERM)
	case 2:
		_ = cmd.Process.Kill()
	}
	err = cmd.Wait()
	if i%3 != 2 && err != nil {
		return fmt.Errorf("harness mcp: %v (stderr %q)", err, stderr.String())
	}
	return nil
}

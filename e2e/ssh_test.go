//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/sshtest"
	"github.com/harness-dev/harness/internal/testenv"
)

// sshd is a real OpenSSH server on loopback (internal/sshtest) whose keys
// reach `harness bridge` as their forced command (docs/design/remote.md).
type sshd struct {
	*sshtest.Server
	t    *testing.T
	user string
}

// sshKey is a client key of the test's sshd and what it is allowed.
type sshKey = sshtest.Key

func newSSHD(t *testing.T, keys ...sshKey) *sshd {
	t.Helper()
	testenv.File(t, sshtest.Sshd, "Debian's openssh-server")
	srv, err := sshtest.Start(t.TempDir(), keys...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	return &sshd{Server: srv, t: t, user: srv.User}
}

// host is the --host address of this server.
func (s *sshd) host() string { return s.Host() }

// env is the environment of a client using key.
func (s *sshd) env(key string) []string {
	return append(os.Environ(), "HARNESS_SOCKET=", "HARNESS_MCP_TOKEN=", "HARNESS_HOST=", "HARNESS_SSH_COMMAND="+s.SSHCommand(key))
}

// run runs the CLI against host (another sshd's port, say) with key.
func (s *sshd) runHost(host, key string, args ...string) (stdout, stderr string, code int) {
	s.t.Helper()
	c := exec.Command(harnessBin, append([]string{"--host", host}, args...)...)
	c.Env = s.env(key)
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	err := c.Run()
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			s.t.Fatalf("run harness %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return o.String(), e.String(), code
}

func (s *sshd) run(key string, args ...string) (stdout, stderr string, code int) {
	s.t.Helper()
	return s.runHost(s.host(), key, args...)
}

// jsonError is a --json failure's body.
type jsonError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// stableRows decodes list --json and drops what moves between two calls
// (idle time).
func stableRows(t *testing.T, out string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("list --json: %v: %s", err, out)
	}
	for _, r := range rows {
		delete(r, "idle_s")
		delete(r, "idle_since")
	}
	return rows
}

func TestScenario_RemoteFleetOverSSHUnderAKeysGrant(t *testing.T) {
	f := newFleet(t, `
[harness.echo]
cmd = "sh"
args = ["-c", "echo remote-hello; exec cat"]
enabled = true
term_size = "80x24" # a viewer may size it down to here, not below

[harness.idle]
cmd = "sleep"
args = ["100000"]
`)
	bridge := func(grant string) string {
		return fmt.Sprintf("%s --socket %s bridge --grant %s", harnessBin, f.Socket, grant)
	}
	s := newSSHD(t,
		sshKey{Name: "watcher", Command: bridge("read")},
		sshKey{Name: "answerer", Command: bridge("read,input")},
		sshKey{Name: "operator", Command: bridge("read,write,input") + " --key operator"},
		sshKey{Name: "shell"}, // no forced command: runs what the client asks
	)
	f.waitState("echo", "running")

	t.Run("list through SSH equals the local list", func(t *testing.T) {
		f.MustRun("wait", "echo", "--idle", "1s", "--timeout", "20s") // activity settles
		local := f.MustRun("list", "--json")
		out, errOut, code := s.run("watcher", "list", "--json")
		if code != 0 {
			t.Fatalf("remote list: exit %d: %s%s", code, out, errOut)
		}
		if got, want := stableRows(t, out), stableRows(t, local); !jsonEqual(got, want) {
			t.Fatalf("remote list differs from local:\nremote %s\nlocal  %s", out, local)
		}
		out, errOut, code = s.run("watcher", "logs", "echo", "--raw")
		if code != 0 || !strings.Contains(out, "remote-hello") {
			t.Fatalf("remote logs: exit %d: %q %s", code, out, errOut)
		}
	})

	t.Run("a read key is refused write and input, naming the class", func(t *testing.T) {
		for _, args := range [][]string{{"stop", "echo"}, {"send", "echo", "typed", "--enter"}, {"start", "idle"}} {
			out, errOut, code := s.run("watcher", append(args, "--json")...)
			var e jsonError
			if code == 0 || json.Unmarshal([]byte(out), &e) != nil || e.Error.Code != "not_permitted" {
				t.Fatalf("%v with a read key: exit %d, %s%s; want not_permitted", args, code, out, errOut)
			}
			need := "write"
			if args[0] == "send" {
				need = "input"
			}
			if !strings.Contains(e.Error.Message, "needs "+need) {
				t.Fatalf("%v: message %q does not name the class %s", args, e.Error.Message, need)
			}
		}
		// Nothing reached the daemon.
		if u := f.unit("echo"); u.State != "running" {
			t.Fatalf("echo is %s after refused stops", u.State)
		}
		if u := f.unit("idle"); u.State != "stopped" {
			t.Fatalf("idle is %s after a refused start", u.State)
		}
		if raw := f.MustRun("logs", "echo", "--raw"); strings.Contains(raw, "typed") {
			t.Fatalf("a refused send was typed: %q", raw)
		}
	})

	t.Run("an answering key types but does not stop", func(t *testing.T) {
		if out, errOut, code := s.run("answerer", "send", "echo", "answered-remotely", "--enter"); code != 0 {
			t.Fatalf("send with read,input: exit %d: %s%s", code, out, errOut)
		}
		f.WaitFor("the remote send to be echoed", 10*time.Second, func() bool {
			return strings.Contains(f.MustRun("logs", "echo", "--raw"), "answered-remotely")
		})
		if _, _, code := s.run("answerer", "restart", "echo"); code == 0 {
			t.Fatal("restart with read,input succeeded")
		}
	})

	t.Run("an operator key stops and starts", func(t *testing.T) {
		if out, errOut, code := s.run("operator", "stop", "echo"); code != 0 {
			t.Fatalf("stop: exit %d: %s%s", code, out, errOut)
		}
		if u := f.unit("echo"); u.State != "stopped" {
			t.Fatalf("echo is %s after a remote stop", u.State)
		}
		if out, errOut, code := s.run("operator", "start", "echo"); code != 0 {
			t.Fatalf("start: exit %d: %s%s", code, out, errOut)
		}
		f.waitState("echo", "running")
		// The audit log names the key and the door.
		f.waitAudit("start", "echo", "ssh", "ssh:operator")
	})

	t.Run("an MCP session through the bridge has the key's grant", func(t *testing.T) {
		cmd := exec.Command(harnessBin, "--host", s.host(), "mcp")
		cmd.Env = s.env("answerer")
		cmd.Stderr = os.Stderr
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cl := mcp.NewClient(&mcp.Implementation{Name: "e2e-ssh", Version: "1"}, nil)
		sess, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect harness --host … mcp: %v", err)
		}
		defer sess.Close()
		names := toolNames(t, sess)
		if !slices.Contains(names, "harness_list") || !slices.Contains(names, "harness_send") {
			t.Fatalf("read,input session lists %v: want harness_list and harness_send", names)
		}
		if slices.Contains(names, "harness_stop") {
			t.Fatalf("read,input session lists write tools: %v", names)
		}
		var listed struct {
			Harnesses []struct {
				Name string `json:"name"`
			} `json:"harnesses"`
		}
		resultJSON(t, callTool(t, sess, "harness_list", nil), &listed)
		if len(listed.Harnesses) != 2 {
			t.Fatalf("harness_list through SSH: %+v", listed)
		}
		if code := errorCode(t, callTool(t, sess, "harness_stop", map[string]any{"name": "echo"})); code != "not_permitted" {
			t.Fatalf("harness_stop through a read,input bridge: code %q", code)
		}
	})

	t.Run("an unreachable host or one without harness says so in one line", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		_, errOut, code := s.runHost(fmt.Sprintf("ssh://%s@127.0.0.1:%d", s.user, closed), "watcher", "list")
		if code == 0 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "refused") {
			t.Fatalf("unreachable host: exit %d, stderr %q: want one line saying the connection was refused", code, errOut)
		}
		c := exec.Command(harnessBin, "--host", s.host(), "list")
		c.Env = append(s.env("shell"), "HARNESS_REMOTE_BIN=/nonexistent/harness")
		var e bytes.Buffer
		c.Stderr = &e
		if err := c.Run(); err == nil || strings.Count(strings.TrimSpace(e.String()), "\n") != 0 || !strings.Contains(e.String(), "/nonexistent/harness") {
			t.Fatalf("host without harness: %v, stderr %q: want one line naming the missing program", err, e.String())
		}
	})

	t.Run("attach through SSH in a real terminal", func(t *testing.T) {
		x := newTmuxServer(t)
		// The windows' shells share the tmux server's environment: each
		// command line carries its key.
		attach := func(key string, args ...string) string {
			return "HARNESS_SSH_COMMAND=" + shellQuote(s.SSHCommand(key)) + " " + harnessBin + " --host " + s.host() + " attach " + strings.Join(args, " ")
		}
		x.window("rw")
		x.typeLine("rw", attach("operator", "echo"))
		x.waitText("rw", "remote-hello")
		x.run("send-keys", "-t", "e2e:rw", "-l", "typed-through-ssh")
		x.run("send-keys", "-t", "e2e:rw", "Enter")
		f.WaitFor("keys typed through the SSH attach to reach the program", 10*time.Second, func() bool {
			return strings.Count(f.MustRun("logs", "echo", "--raw"), "typed-through-ssh") >= 2 // the echo and cat's copy
		})
		x.run("resize-window", "-t", "e2e:rw", "-x", "90", "-y", "25")
		f.WaitFor("the PTY to follow the remote viewer's size", 10*time.Second, func() bool {
			var scr struct {
				Cols int `json:"cols"`
				Rows int `json:"rows"`
			}
			f.MustJSON(&scr, "screen", "echo")
			return scr.Cols == 90 && scr.Rows == 25
		})
		x.run("send-keys", "-t", "e2e:rw", "C-]")
		x.waitPane("rw", "the shell back after detaching", func(s string) bool { return strings.HasSuffix(s, "$") })

		x.window("ro")
		x.typeLine("ro", attach("watcher", "--read-only", "echo"))
		x.waitText("ro", "typed-through-ssh")
		x.run("send-keys", "-t", "e2e:ro", "C-]")
		x.waitPane("ro", "the shell back after detaching", func(s string) bool { return strings.HasSuffix(s, "$") })
		x.window("refused")
		x.typeLine("refused", attach("watcher", "echo"))
		x.waitText("refused", "needs input")
	})
}

// jsonEqual compares two decoded JSON values.
func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// shellQuote is s as one POSIX shell word, for a command line typed into
// a terminal.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

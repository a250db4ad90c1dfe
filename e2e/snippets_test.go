//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// envWithout is the environment minus every variable named in drop, plus add.
func envWithout(drop []string, add ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, k) {
			env = append(env, kv)
		}
	}
	return append(env, add...)
}

// snippetJSON decodes the JSON part of a claude-code or cursor snippet.
func snippetJSON(t *testing.T, s string) (entry struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}) {
	t.Helper()
	var doc struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(s[strings.Index(s, "{"):]), &doc); err != nil {
		t.Fatalf("snippet %q: %v", s, err)
	}
	if err := json.Unmarshal(doc.MCPServers["harness"], &entry); err != nil {
		t.Fatalf("snippet %q: %v", s, err)
	}
	return entry
}

// TestMCPConfig_SnippetCarriesANonDefaultSocket: a daemon on another socket
// (a second fleet, a test, the demo) used to get snippets that launched
// `harness mcp` against the default socket, so the client found no daemon.
// The snippet now carries HARNESS_SOCKET, and an MCP client that launches it
// exactly as written reaches the daemon.
func TestMCPConfig_SnippetCarriesANonDefaultSocket(t *testing.T) {
	f := newFleet(t, "")
	clean := []string{"HARNESS_SOCKET", "HARNESS_MCP_TOKEN", "XDG_RUNTIME_DIR"}
	snippet := func(env []string, args ...string) string {
		c := exec.Command(harnessBin, append(args, "mcp", "config")...)
		c.Env = env
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("mcp config %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	for name, env := range map[string][]string{
		"flag": envWithout(clean),
		"env":  envWithout(clean, "HARNESS_SOCKET="+f.Socket),
	} {
		var args []string
		if name == "flag" {
			args = []string{"--socket", f.Socket}
		}
		for _, client := range []string{"claude-code", "cursor"} {
			e := snippetJSON(t, snippet(env, append(args, "--client", client)...))
			if e.Env["HARNESS_SOCKET"] != f.Socket {
				t.Errorf("%s, %s: env %v, want HARNESS_SOCKET=%s", name, client, e.Env, f.Socket)
			}
		}
		codex := snippet(env, append(args, "--client", "codex")...)
		var doc struct {
			MCPServers map[string]struct {
				Env map[string]string `toml:"env"`
			} `toml:"mcp_servers"`
		}
		if _, err := toml.Decode(codex, &doc); err != nil || doc.MCPServers["harness"].Env["HARNESS_SOCKET"] != f.Socket {
			t.Errorf("%s, codex: %v\n%s", name, err, codex)
		}
		if cc := snippet(env, append(args, "--client", "claude-code")...); !strings.Contains(cc, "claude mcp add harness -e HARNESS_SOCKET="+f.Socket+" -- ") {
			t.Errorf("%s: the claude mcp add line lacks the socket:\n%s", name, cc)
		}
	}

	// The default socket needs nothing: the bridge finds it by itself.
	rt := t.TempDir()
	defEnv := envWithout(clean, "XDG_RUNTIME_DIR="+rt)
	for _, args := range [][]string{nil, {"--socket", filepath.Join(rt, "harness", "harness.sock")}} {
		if s := snippet(defEnv, args...); strings.Contains(s, "HARNESS_SOCKET") {
			t.Errorf("default socket %v: %s", args, s)
		}
	}

	// Launched as written, from an environment that knows no socket.
	e := snippetJSON(t, snippet(envWithout(clean), "--socket", f.Socket, "--client", "claude-code"))
	cmd := exec.Command(e.Command, e.Args...)
	cmd.Env = envWithout(clean)
	for k, v := range e.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := mcp.NewClient(&mcp.Implementation{Name: "snippet", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("the snippet's command does not reach the daemon: %v", err)
	}
	defer s.Close()
	if got := toolNames(t, s); !slices.Equal(got, readTools) {
		t.Fatalf("through the snippet: %v", got)
	}
}

// demoRun is one running `harness demo`, started by start, its output kept.
type demoRun struct {
	t    *testing.T
	cmd  *exec.Cmd
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan error
}

func startDemo(t *testing.T, cmd *exec.Cmd) *demoRun {
	t.Helper()
	d := &demoRun{t: t, cmd: cmd, done: make(chan error, 1)}
	w := lockedWriter{&d.mu, &d.buf}
	cmd.Stdout, cmd.Stderr = w, w
	// Its own process group, so Ctrl-C can reach it as a terminal would
	// (go run leaves SIGINT to the program it runs).
	cmd.SysProcAttr = withParentDeath(&syscall.SysProcAttr{Setpgid: true})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- cmd.Wait() }()
	t.Cleanup(func() { d.interrupt() })
	return d
}

func (d *demoRun) output() string { d.mu.Lock(); defer d.mu.Unlock(); return d.buf.String() }

// tryLines waits for the demo's "Try" block and returns its socket and the
// command lines that follow the export.
func (d *demoRun) tryLines(within time.Duration) (string, []string) {
	d.t.Helper()
	re := regexp.MustCompile(`(?s)export HARNESS_SOCKET=(\S+)\n(.*?)\n\n`)
	deadline := time.Now().Add(within)
	for {
		if m := re.FindStringSubmatch(d.output()); m != nil {
			return m[1], strings.Split(m[2], "\n")
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("no Try block after %v:\n%s", within, d.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// interrupt is Ctrl-C: SIGINT to the demo's process group; it waits for the
// demo to end.
func (d *demoRun) interrupt() error {
	// Once the demo was reaped its id is free: a second call (the cleanup
	// after the test's own) must not signal whoever has the number now.
	select {
	case err := <-d.done:
		d.done <- err
		return err
	default:
	}
	syscall.Kill(-d.cmd.Process.Pid, syscall.SIGINT)
	select {
	case err := <-d.done:
		d.done <- err
		return err
	case <-time.After(60 * time.Second):
		syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		d.t.Errorf("the demo did not end on Ctrl-C:\n%s", d.output())
		return <-d.done
	}
}

// pasteList runs the demo's `list` line as a newcomer would paste it, in a
// shell whose PATH has no harness.
func pasteList(t *testing.T, socket string, lines []string) string {
	t.Helper()
	var line string
	for _, l := range lines {
		if strings.Contains(l, " list ") {
			line, _, _ = strings.Cut(l, "#")
		}
	}
	if line == "" {
		t.Fatalf("no list line among %q", lines)
	}
	sh := exec.Command("sh", "-c", "export HARNESS_SOCKET="+socket+"\n"+line)
	sh.Env = envWithout([]string{"HARNESS_SOCKET", "PATH"}, "PATH=/usr/bin:/bin")
	out, err := sh.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "demo") {
		t.Fatalf("pasted %q: %v\n%s", line, err, out)
	}
	return strings.TrimSpace(line)
}

// TestDemo_TryCommandsWorkWithoutHarnessOnPath: the demo printed `harness
// list` and so on, which fail for someone who ran `go run ./cmd/harness
// demo` and has no harness on PATH. The lines now name the binary that is
// running, and pasted into a shell they work; with harness on PATH they
// keep the short name.
func TestDemo_TryCommandsWorkWithoutHarnessOnPath(t *testing.T) {
	noHarness := envWithout([]string{"HARNESS_SOCKET", "HARNESS_MCP_TOKEN", "PATH"}, "PATH=/usr/bin:/bin")
	cmd := exec.Command(harnessBin, "demo", "--exit-after", "2m")
	cmd.Env = noHarness
	d := startDemo(t, cmd)
	socket, lines := d.tryLines(30 * time.Second)
	if got := pasteList(t, socket, lines); !strings.HasPrefix(got, harnessBin+" list") {
		t.Fatalf("list line %q, want it to name %s", got, harnessBin)
	}
	if err := d.interrupt(); err != nil {
		t.Fatalf("demo: %v", err)
	}

	// With this very binary on PATH as harness, the short name is printed.
	bin := t.TempDir()
	if err := os.Symlink(harnessBin, filepath.Join(bin, "harness")); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(harnessBin, "demo", "--exit-after", "2m")
	cmd.Env = envWithout([]string{"HARNESS_SOCKET", "HARNESS_MCP_TOKEN", "PATH"}, "PATH="+bin+":/usr/bin:/bin")
	d = startDemo(t, cmd)
	if _, lines := d.tryLines(30 * time.Second); !strings.HasPrefix(strings.TrimSpace(lines[0]), "harness list") {
		t.Fatalf("with harness on PATH: %q", lines)
	}
}

// TestScenario_GoRunDemo: a newcomer's first command, `go run ./cmd/harness
// demo`, then the printed lines pasted into another terminal.
func TestScenario_GoRunDemo(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	cmd := exec.Command(goBin, "run", "../cmd/harness", "demo", "--exit-after", "2m")
	cmd.Env = envWithout([]string{"HARNESS_SOCKET", "HARNESS_MCP_TOKEN", "PATH"}, "PATH="+filepath.Dir(goBin)+":/usr/bin:/bin")
	d := startDemo(t, cmd)
	socket, lines := d.tryLines(3 * time.Minute)
	pasteList(t, socket, lines)
	demoPIDs := environHas("HARNESS_SOCKET=" + socket)
	// go run itself exits 1 after a Ctrl-C whatever the program did; the
	// demo's own last line says it cleaned up.
	d.interrupt()
	if !strings.Contains(d.output(), "harness demo: stopped; nothing left running") {
		t.Fatalf("go run demo did not stop cleanly:\n%s", d.output())
	}
	for _, pid := range demoPIDs {
		waitGone(t, "demo process", pid)
	}
}

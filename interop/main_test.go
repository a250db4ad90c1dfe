//go:build interop

// Package interop drives a real harness daemon with third-party MCP
// clients and servers from npm (pinned in package-lock.json): the
// TypeScript SDK client, through client.mjs, and the reference servers
// behind the broker. `npm ci` in this directory must have run first.
package interop

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/fleettest"

	"github.com/harness-dev/harness/internal/testenv"
)

var (
	// harnessBin is the binary TestMain builds once.
	harnessBin string
	// interopDir is this package's directory (absolute): node_modules and
	// client.mjs live here.
	interopDir string
	nodeBin    string
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	var err error
	if interopDir, err = filepath.Abs("."); err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		return 1
	}
	for _, pkg := range []string{"sdk", "server-everything", "server-memory", "server-filesystem"} {
		p := filepath.Join(interopDir, "node_modules", "@modelcontextprotocol", pkg, "package.json")
		if _, err := os.Stat(p); err != nil {
			return missing(fmt.Sprintf("the MCP SDK and reference servers from npm (npm ci in interop/; %s is missing)", p))
		}
	}
	if nodeBin, err = exec.LookPath("node"); err != nil {
		return missing("Node 20+ on PATH")
	}
	dir, err := os.MkdirTemp("", "harness-interop-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	harnessBin = filepath.Join(dir, "harness")
	build := exec.Command("go", "build", "-o", harnessBin, "../cmd/harness")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "interop: build harness:", err)
		return 1
	}
	return m.Run()
}

// missing says in one line what the whole package needs and is not
// here: every test skips, or under HARNESS_CI the package fails.
func missing(what string) int {
	line, fail := testenv.Check(what, "")
	fmt.Fprintln(os.Stderr, "interop:", line)
	if fail {
		return 1
	}
	return 0
}

// bin is the absolute path of an npm package's executable.
func bin(name string) string {
	return filepath.Join(interopDir, "node_modules", ".bin", name)
}

// cleanEnv is the environment for every child: no ambient daemon socket
// or token may leak in from the developer's shell.
func cleanEnv(extra ...string) []string {
	return append(os.Environ(), append([]string{"HARNESS_SOCKET=", "HARNESS_MCP_TOKEN=", "HARNESS_CONFIG=", "HARNESS_STATE_DIR="}, extra...)...)
}

// fleet is one real daemon on temp dirs (fleettest.Fleet, shared with
// cmd/harness's e2e tests: files, start, stop, log and the CLI verbs).
type fleet struct{ *fleettest.Fleet }

// newFleet writes config (the daemon's harness.toml) and starts the daemon
// on it, returning once `harness daemon-info` answers. It is stopped with
// SIGTERM at cleanup.
func newFleet(t *testing.T, config string) *fleet {
	t.Helper()
	return newFleetAt(t, t.TempDir(), config)
}

// newFleetAt is newFleet on a given directory, for configs that must name
// the daemon's socket before it starts; args go to the daemon.
func newFleetAt(t *testing.T, dir, config string, args ...string) *fleet {
	t.Helper()
	f := &fleet{fleettest.NewFleet(t, harnessBin, dir, cleanEnv())}
	f.WriteConfig(config)
	f.Start(func() bool {
		_, _, code := f.Run("daemon-info")
		return code == 0
	}, args...)
	return f
}

// bridge is the transport spec that makes client.mjs run `harness mcp`
// against this fleet, as an agent's MCP client would.
func (f *fleet) bridge(extraArgs ...string) map[string]any {
	return map[string]any{
		"type":    "stdio",
		"command": harnessBin,
		"args":    append([]string{"mcp", "--socket", f.Socket}, extraArgs...),
		"env":     map[string]string{"HARNESS_SOCKET": "", "HARNESS_MCP_TOKEN": ""},
	}
}

// syncBuffer is a bytes.Buffer safe for a child's writer and a reader.
type syncBuffer = fleettest.SyncBuffer

// step is one line client.mjs prints.
type step struct {
	I         int             `json:"i"`
	Op        string          `json:"op"`
	Conn      string          `json:"conn"`
	ID        string          `json:"id"`
	OK        bool            `json:"ok"`
	Result    json.RawMessage `json:"result"`
	Error     string          `json:"error"`
	ErrorCode *int            `json:"errorCode"`
	Progress  []struct {
		Progress float64 `json:"progress"`
		Total    float64 `json:"total"`
	} `json:"progress"`
}

// tsClient is one running client.mjs: the TypeScript SDK client.
type tsClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	done   chan struct{}
	mu     sync.Mutex
	stdout []string
	stderr syncBuffer
}

// startTS starts client.mjs on plan ({"steps": [...]}).
func startTS(t *testing.T, steps ...map[string]any) *tsClient {
	t.Helper()
	plan, err := json.Marshal(map[string]any{"steps": steps})
	if err != nil {
		t.Fatal(err)
	}
	c := &tsClient{t: t, lines: make(chan string, 64), done: make(chan struct{})}
	c.cmd = exec.Command(nodeBin, filepath.Join(interopDir, "client.mjs"), string(plan))
	c.cmd.Dir = interopDir
	c.cmd.Env = cleanEnv()
	c.cmd.Stderr = &c.stderr
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			c.mu.Lock()
			c.stdout = append(c.stdout, sc.Text())
			c.mu.Unlock()
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		go func() {
			for range c.lines { // the test is over: nobody else reads
			}
		}()
		c.stdin.Close()
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	go func() { c.cmd.Wait(); close(c.done) }()
	return c
}

// transcript is everything the client printed, for failure messages.
func (c *tsClient) transcript() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("client.mjs stdout:\n%s\nclient.mjs stderr:\n%s", strings.Join(c.stdout, "\n"), c.stderr.String())
}

// next returns the next step line.
func (c *tsClient) next() step {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			<-c.done
			c.t.Fatalf("client.mjs ended early (%v)\n%s", c.cmd.ProcessState, c.transcript())
		}
		var s step
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			c.t.Fatalf("client.mjs printed %q: %v\n%s", line, err, c.transcript())
		}
		return s
	case <-time.After(90 * time.Second):
		c.t.Fatalf("no step from client.mjs within 90s\n%s", c.transcript())
	}
	return step{}
}

// resume answers a pause step.
func (c *tsClient) resume() {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
		c.t.Fatalf("resume client.mjs: %v\n%s", err, c.transcript())
	}
}

// wait waits for client.mjs to exit 0 after its last step.
func (c *tsClient) wait() {
	c.t.Helper()
	c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(60 * time.Second):
		c.t.Fatalf("client.mjs did not exit\n%s", c.transcript())
	}
	if !c.cmd.ProcessState.Success() {
		c.t.Fatalf("client.mjs: %v\n%s", c.cmd.ProcessState, c.transcript())
	}
}

// runTS runs a plan without pauses to its end and returns its steps, one
// per plan step.
func runTS(t *testing.T, steps ...map[string]any) (*tsClient, []step) {
	t.Helper()
	c := startTS(t, steps...)
	var out []step
	for range steps {
		out = append(out, c.next())
	}
	c.wait()
	if testing.Verbose() {
		t.Log(c.transcript())
	}
	return c, out
}

// must asserts that s succeeded and decodes its result into v (if non-nil).
func (c *tsClient) must(s step, v any) {
	c.t.Helper()
	if !s.OK {
		c.t.Fatalf("step %d %s (%s): %s\n%s", s.I, s.Op, s.ID, s.Error, c.transcript())
	}
	if v != nil {
		if err := json.Unmarshal(s.Result, v); err != nil {
			c.t.Fatalf("step %d %s: decode %s: %v\n%s", s.I, s.Op, s.Result, err, c.transcript())
		}
	}
}

// toolResult is a tools/call result as the TS client returns it.
type toolResult struct {
	IsError bool `json:"isError"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
}

func (r toolResult) text() string {
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// tool is a tools/list entry as the TS client returns it.
type tool struct {
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// Step builders.

func connectStep(conn string, transport map[string]any) map[string]any {
	return map[string]any{"op": "connect", "conn": conn, "transport": transport}
}

func opStep(conn, op string, kv ...any) map[string]any {
	m := map[string]any{"op": op, "conn": conn}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

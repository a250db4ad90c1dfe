package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/mcp/demoupstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// upstreamEnv selects the helper mode: the test binary re-executes itself
// as a demo upstream named by the variable's value.
const upstreamEnv = "BROKER_TEST_DEMO_UPSTREAM"

func TestMain(m *testing.M) {
	if name := os.Getenv(upstreamEnv); name != "" {
		if err := demoupstream.Serve(context.Background(), os.Stdin, os.Stdout, name); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// proc is a real demo upstream process.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	waited chan struct{}
}

// spawn starts the test binary as a demo upstream called name, with extra
// environment entries, and ends it when the test ends.
func spawn(t *testing.T, name string, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), upstreamEnv+"="+name), env...)
	cmd.Stderr = os.Stderr // an *os.File: no copying goroutine to leak
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, stdin: stdin, stdout: stdout, waited: make(chan struct{})}
	go func() {
		defer close(p.waited)
		// The exit status is the test's business only in kill tests, which
		// read ProcessState after waited closes.
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		if err := cmd.Process.Kill(); err != nil && !strings.Contains(err.Error(), "process already finished") {
			t.Errorf("kill upstream %s: %v", name, err)
		}
		<-p.waited
	})
	return p
}

// kill ends the process with SIGKILL and waits until it is reaped.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.waited
}

func newBroker(t *testing.T, opts Options, ups map[string]Upstream) *Broker {
	t.Helper()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b := New(log, opts)
	b.Configure(ups)
	t.Cleanup(b.Close)
	return b
}

// testWriter sends broker logs to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// waitFor waits for cond on the broker's change events, never by sleeping.
func waitFor(t *testing.T, b *Broker, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		ch := b.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; status %+v", what, b.Status())
		}
	}
}

func connected(b *Broker, unit string) func() bool {
	return func() bool {
		for _, s := range b.Status() {
			if s.Unit == unit {
				return s.Connected
			}
		}
		return false
	}
}

// attach starts a demo upstream for unit and waits until it is connected.
func attach(t *testing.T, b *Broker, unit, name string, run uint64, env ...string) *proc {
	t.Helper()
	p := spawn(t, name, env...)
	serveRun(b, nil, unit, run, p.stdin, p.stdout)
	waitFor(t, b, unit+" connected", connected(b, unit))
	return p
}

func args(t *testing.T, v any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// call makes a call without progress and fails the test on a Go error.
func call(t *testing.T, b *Broker, project, name string, a any) *mcp.CallToolResult {
	t.Helper()
	res, err := b.Call(context.Background(), project, name, args(t, a), nil, nil, nil)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("result has no content: %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("first content is %T, want text", res.Content[0])
	}
	return tc.Text
}

func toolNames(ts []Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Tool.Name
	}
	return out
}

// serveRun hands b a process upstream's run on pipes, as its supervisor
// does through control; starts (nil: nobody) gets the run's start report.
func serveRun(b *Broker, starts chan<- startReport, unit string, run uint64, stdin io.WriteCloser, stdout io.ReadCloser) {
	r := api.UpstreamRun{Unit: unit, Run: run, Link: api.Pipes{Stdin: stdin, Stdout: stdout}}
	if starts != nil {
		r.Started = func(err error) { starts <- startReport{unit, run, err} }
	}
	b.Serve(context.Background(), r)
}

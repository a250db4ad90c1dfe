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
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/supervise"

	"github.com/harness-dev/harness/internal/testenv"
)

// listTimes times n list calls on one connection to the daemon, as the CLI
// makes them (the CLI's own start is left out: it is what a loaded machine
// makes slow, not the daemon).
func (f *fleet) listTimes(n int) []time.Duration {
	f.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, f.Socket)
	if err != nil {
		f.T.Fatal(err)
	}
	defer c.Close()
	var out []time.Duration
	for range n {
		var rows []api.UnitInfo
		start := time.Now()
		if err := c.Call(ctx, api.OpList, struct{}{}, &rows); err != nil {
			f.T.Fatal(err)
		}
		out = append(out, time.Since(start))
	}
	slices.Sort(out)
	return out
}

// TestScenario_ACSIStormDoesNotFreezeTheDaemon: a harness that prints huge
// counts in a loop (`x\e[99999999b` froze `list`, `screen` and `stop` for
// minutes and burnt two cores) leaves list answering within
// 100 ms, its screen readable and the unit stoppable within a second.
func TestScenario_ACSIStormDoesNotFreezeTheDaemon(t *testing.T) {
	script := `while :; do printf 'x\033[99999999b\033[99999999I\033[99999999Z\033[99999999X\033[99999999L\033[99999999S'; done`
	f := newFleet(t, fmt.Sprintf("[harness.storm]\ncmd = \"sh\"\nargs = [\"-c\", %q]\nstop_grace = 2\n", script))
	before := f.listTimes(5)
	f.MustRun("start", "storm")
	f.WaitFor("the storm to be busy", 10*time.Second, func() bool {
		var s screenJSON
		f.MustJSON(&s, "screen", "storm")
		return s.Activity == "busy"
	})
	during := f.listTimes(9)
	_, screenTook := f.runWithin(10*time.Second, "screen", "storm")
	_, stopTook := f.runWithin(10*time.Second, "stop", "storm")
	t.Logf("list before the storm %v, during %v; screen %v, stop %v (CLI runs)", before, during, screenTook, stopTook)
	// The median: a loaded machine (CI's, or 8 builds on 2 cores) stalls
	// single calls whatever the daemon does; a frozen daemon stalls them all.
	if med := during[len(during)/2]; med > 100*time.Millisecond {
		t.Errorf("list took %v (median) during the storm", med)
	}
	if stopTook > time.Second {
		t.Errorf("stop took %v", stopTook)
	}
	f.waitState("storm", "stopped")
}

// TestScenario_JSONRPCIdsComeBackAsSent: a Python client writing one
// message and reading its answer before the next (as the fault campaign's
// did) gets an Invalid Request error with id null for a request with id
// null, and the session goes on; ids 1.5, 1e40 and "\u0041" come back byte
// for byte (they came back as 1, -9223372036854775808 and "A"), with and
// without the stdio hand-off.
func TestScenario_JSONRPCIdsComeBackAsSent(t *testing.T) {
	testenv.Program(t, "python3")
	f := newFleet(t, "")
	asks := []string{
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1e40,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"\u0041","method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	}
	for _, mode := range bridgeModes {
		t.Run(mode.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "python3", append([]string{"testdata/idclient.py", harnessBin, f.Socket}, asks...)...)
			cmd.Env = append(os.Environ(), "HARNESS_MCP_TOKEN=", "HARNESS_SOCKET=", mode.env)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("python client: %v\n%s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != 1+len(asks) {
				t.Fatalf("%d answers, want %d:\n%s", len(lines), 1+len(asks), out)
			}
			null := lines[1]
			var e struct {
				ID    json.RawMessage    `json:"id"`
				Error struct{ Code int } `json:"error"`
			}
			if json.Unmarshal([]byte(null), &e) != nil || string(e.ID) != "null" || e.Error.Code != -32600 {
				t.Errorf("id null: got %s, want an Invalid Request error (-32600) with id null", null)
			}
			for i, want := range []string{`"id":1.5,`, `"id":1e40,`, `"id":"\u0041",`, `"id":1,`, `"id":2,`} {
				if got := lines[2+i]; !strings.Contains(got, want) || !strings.Contains(got, `"result"`) {
					t.Errorf("answer %d: got %s, want a result with %s", i, got, want)
				}
			}
		})
	}
}

// TestScenario_ConcurrentSendsToADeafProgramAreBounded: 50 sends at once to
// a program that does not read its terminal (8 took 40 s and 30 of 50 were
// still pending after 90 s, and a timed-out send left 13312 of its 16001
// bytes typed) are all answered within one input deadline:
// beyond the queue's bound at once, busy; the rest typed whole or refused
// with nothing typed (a send waits for the program to read what was typed
// before it), and the program reads exactly the whole sends once it starts
// to.
func TestScenario_ConcurrentSendsToADeafProgramAreBounded(t *testing.T) {
	dir := t.TempDir()
	got := filepath.Join(dir, "got")
	ready := filepath.Join(dir, "ready")
	script := fmt.Sprintf(`stty raw -echo; touch %s; while [ ! -e %s.go ]; do sleep 0.1; done; exec cat > %s`, ready, ready, got)
	f := newFleet(t, fmt.Sprintf("[harness.deaf]\ncmd = \"sh\"\nargs = [\"-c\", %q]\nstop_grace = 2\n", script))
	f.MustRun("start", "deaf")
	f.WaitFor("the deaf program to be ready", 10*time.Second, func() bool { _, err := os.Stat(ready); return err == nil })

	// 4000 bytes: what an empty PTY input queue always takes whole (its
	// line discipline's 4 KiB); past about 13 KiB even the first send to a
	// program that never reads stops halfway, and says so.
	const n, size = 50, 4000
	type answer struct {
		written int
		code    errcode.Code
		msg     string
		took    time.Duration
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var r api.SendResult
			err := client.CallOnce(ctx, f.Socket, api.OpSend, api.SendArgs{Name: "deaf", Text: strings.Repeat(string(rune('a'+i%26)), size)}, &r)
			a := answer{written: r.Bytes, code: errcode.Of(err), took: time.Since(start)}
			if err != nil {
				a.msg = err.Error()
				if m := regexp.MustCompile(`\((\d+) of \d+ bytes written\)`).FindStringSubmatch(a.msg); m != nil {
					a.written, _ = strconv.Atoi(m[1])
				} else if !strings.Contains(a.msg, "nothing was written") {
					t.Errorf("send %d: %v: says not what it typed", i, err)
				}
			}
			answers[i] = a
		})
	}
	wg.Wait()
	total, whole, partial, busy := 0, 0, 0, 0
	var last time.Duration
	for i, a := range answers {
		total += a.written
		last = max(last, a.took)
		switch {
		case a.code == "" && a.written == size:
			whole++
		case a.code == errcode.Busy && a.written == 0:
			busy++
		case a.code == errcode.Busy:
			partial++
			t.Logf("send %d was partly typed: %s", i, a.msg)
		default:
			t.Errorf("send %d: %+v", i, a)
		}
	}
	t.Logf("%d sends: %d whole, %d busy with nothing typed, %d partial (said so); all answered within %v", n, whole, busy, partial, last)
	if last > supervise.InputTimeout+2*time.Second {
		t.Errorf("the last send was answered after %v: more than one deadline (%v)", last, supervise.InputTimeout)
	}
	if busy < n-supervise.MaxQueuedInputs {
		t.Errorf("%d refused: the queue was not bounded", busy)
	}
	if partial > 0 || whole == 0 {
		t.Errorf("%d sends were partly typed, %d whole: want none partly, at least one whole", partial, whole)
	}
	// Now the program reads: it gets exactly what the answers said was typed.
	if err := os.WriteFile(ready+".go", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.WaitFor("the program to read what was typed", 20*time.Second, func() bool {
		st, err := os.Stat(got)
		return err == nil && st.Size() >= int64(total)
	})
	time.Sleep(300 * time.Millisecond) // and nothing more
	if st, _ := os.Stat(got); st.Size() != int64(total) {
		t.Fatalf("the program read %d bytes; the sends said %d were typed", st.Size(), total)
	}
}

// TestScenario_ShutdownDoesNotWaitForOpenCLIConnections: with a CLI
// connection open (one mid-handshake, one idle after it, one following
// events, `harness mcp` with and without the hand-off), the daemon ends within a second of SIGTERM (it waited ~8 s and
// logged "waiting for connections: context deadline exceeded").
func TestScenario_ShutdownDoesNotWaitForOpenCLIConnections(t *testing.T) {
	f := newFleet(t, "")
	raw, err := net.Dial("unix", f.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.Dial(ctx, f.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sub, err := client.Dial(ctx, f.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := sub.Subscribe(ctx); err != nil {
		t.Fatal(err)
	}
	// Calls in flight that wait long: a wait for calls, a wait for idle.
	for _, call := range []struct {
		op   string
		args any
	}{
		{api.OpCalls, api.CallsArgs{Cursor: new(uint64), WaitS: 60}},
	} {
		go func() { _ = c.Call(ctx, call.op, call.args, nil) }()
	}
	var bridges []*bridgeProc
	for _, mode := range bridgeModes {
		b := startBridge(t, f.Socket, mode.env)
		b.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
		b.line()
		bridges = append(bridges, b)
	}
	start := time.Now()
	if err := f.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.Exited:
	case <-time.After(15 * time.Second):
		t.Fatal("the daemon did not exit")
	}
	took := time.Since(start)
	t.Logf("shutdown took %v", took)
	if took > time.Second {
		log, _ := os.ReadFile(f.LogPath)
		t.Fatalf("shutdown took %v with CLI connections open\n%s", took, log)
	}
}

// TestScenario_AnOpenStateDirIsMadePrivate: a state dir left 0755 (by hand
// or an old version) is made 0700 at start, with a log line.
func TestScenario_AnOpenStateDirIsMadePrivate(t *testing.T) {
	f := newFleet(t, "")
	f.Stop()
	if err := os.Chmod(f.State, 0o755); err != nil {
		t.Fatal(err)
	}
	f.start()
	st, err := os.Stat(f.State)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Fatalf("state dir mode %#o after start, want 0700", st.Mode().Perm())
	}
	if log, _ := os.ReadFile(f.LogPath); !strings.Contains(string(log), "state dir was not private; made it 0700") {
		t.Fatalf("no log line about the state dir:\n%s", log)
	}
}

// TestScenario_AProcessUpstreamsEnvFileValuesAreMasked: a stdio upstream
// whose tool returns its own environment handed its env_file values to
// every read session; they come back masked, as a remote
// upstream's header values are scrubbed.
func TestScenario_AProcessUpstreamsEnvFileValuesAreMasked(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, "up.env")
	const secret = "s3cr3t-value-of-the-upstream"
	if err := os.WriteFile(envFile, []byte("UP_TOKEN="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFleet(t, upstreamTable("up", "mask-"+t.Name(), fmt.Sprintf("env_file = %q", envFile)))
	s := f.mcpSession("", true, nil)
	waitTool(t, f, s, "up__env")
	res := callTool(t, s, "up__env", map[string]any{"key": "UP_TOKEN"})
	if got := text(t, res); strings.Contains(got, secret) || !strings.Contains(got, "[masked]") {
		t.Fatalf("up__env UP_TOKEN answered %q, want it masked", got)
	}
}

// TestScenario_DemoCleansUpOnSIGHUP: a demo whose terminal is closed
// (SIGHUP) stopped its daemon but left its temp dir behind; it
// now cleans up as on Ctrl-C.
func TestScenario_DemoCleansUpOnSIGHUP(t *testing.T) {
	cmd := exec.Command(harnessBin, "demo")
	cmd.Env = append(os.Environ(), "HARNESS_SOCKET=", "HARNESS_MCP_TOKEN=")
	var buf bytes.Buffer
	var mu sync.Mutex
	w := lockedWriter{&mu, &buf}
	cmd.Stdout, cmd.Stderr = w, w
	output := func() string { mu.Lock(); defer mu.Unlock(); return buf.String() }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	sockRe := regexp.MustCompile(`export HARNESS_SOCKET=(\S+)`)
	var socket string
	for deadline := time.Now().Add(30 * time.Second); socket == ""; time.Sleep(50 * time.Millisecond) {
		if m := sockRe.FindStringSubmatch(output()); m != nil {
			socket = m[1]
		} else if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			t.Fatalf("demo printed no socket:\n%s", output())
		}
	}
	dir := filepath.Dir(socket)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("demo did not exit on SIGHUP")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		os.RemoveAll(dir)
		t.Fatalf("demo dir %s left behind after SIGHUP (%v)", dir, err)
	}
}

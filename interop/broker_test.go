//go:build interop

package interop

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

type upstreamStatus struct {
	Key       string `json:"key"`
	State     string `json:"state"`
	PID       int    `json:"pid"`
	Tools     int    `json:"tools"`
	Restarts  int    `json:"restarts"`
	LastError string `json:"last_error"`
}

func (f *fleet) upstreams() map[string]upstreamStatus {
	f.T.Helper()
	var rows []upstreamStatus
	f.MustJSON(&rows, "mcp", "status")
	out := map[string]upstreamStatus{}
	for _, r := range rows {
		out[r.Key] = r
	}
	return out
}

// waitUpstreams waits until every key is running and has listed tools.
func (f *fleet) waitUpstreams(keys ...string) map[string]upstreamStatus {
	f.T.Helper()
	var st map[string]upstreamStatus
	f.WaitFor(fmt.Sprintf("upstreams %v to run with tools", keys), 60e9, func() bool {
		st = f.upstreams()
		for _, k := range keys {
			if u := st[k]; u.State != "running" || u.Tools == 0 || u.PID <= 0 {
				return false
			}
		}
		return true
	})
	return st
}

// procsRunning returns the pids of live processes descended from root
// whose argv contains arg.
func procsRunning(t *testing.T, root int, arg string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	parent := map[int]int{}
	var match []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:]) // state ppid ...
		if len(fields) < 2 || fields[0] == "Z" {
			continue
		}
		parent[pid], _ = strconv.Atoi(fields[1])
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if slices.Contains(strings.Split(string(cmdline), "\x00"), arg) {
			match = append(match, pid)
		}
	}
	var out []int
	for _, pid := range match {
		for p, n := pid, 0; p > 1 && n < 64; p, n = parent[p], n+1 {
			if p == root {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

func toolsByName(t *testing.T, c *tsClient, s step) map[string]json.RawMessage {
	t.Helper()
	var listed struct {
		Tools []json.RawMessage `json:"tools"`
	}
	c.must(s, &listed)
	out := map[string]json.RawMessage{}
	for _, raw := range listed.Tools {
		var tl tool
		if err := json.Unmarshal(raw, &tl); err != nil {
			t.Fatalf("tool %s: %v", raw, err)
		}
		out[tl.Name] = raw
	}
	return out
}

// sameField reports whether field of two tool JSON objects is equal as
// JSON values (key order and spacing aside).
func sameField(a, b json.RawMessage, field string) (bool, string, string) {
	var ma, mb map[string]any
	json.Unmarshal(a, &ma)
	json.Unmarshal(b, &mb)
	ja, _ := json.Marshal(ma[field])
	jb, _ := json.Marshal(mb[field])
	return reflect.DeepEqual(ma[field], mb[field]), string(ja), string(jb)
}

// lastProgressNote explains why the test tolerates losing the progress
// notification an upstream sends right before its result (unless
// HARNESS_INTEROP_STRICT_PROGRESS=1). Both SDK clients dispatch
// notifications asynchronously but settle responses synchronously, so a
// notification that precedes the response on the wire is handled after
// it: the TS client then reports "Received a progress notification for an
// unknown token" (it does so talking to server-everything directly, most
// of the time), and the broker's go-sdk client hands it to a progress
// route that CallTool's return has already retired, so it is dropped.
const lastProgressNote = "the last progress notification arrived after the result (SDK notification/response ordering)"

// Two real npm servers behind the broker, driven through
// `harness mcp` by the TypeScript SDK client. Tools are namespaced with
// their schemas passed through unchanged (compared with what the same
// client sees talking to the servers directly); a call goes through; the
// one memory upstream keeps state across calls and sessions; an upstream's
// own error comes back as isError naming the upstream and keeping its
// message; progress notifications of a long-running call reach the
// caller; and two open sessions share exactly one process per upstream.
// The sessions are started with --allow-control (read and write): this
// test is about pass-through, and both servers have write tools.
func TestTS_BrokerWithEverythingAndMemory(t *testing.T) {
	memDir := t.TempDir()
	memFile := filepath.Join(memDir, "memory.jsonl")
	everythingBin, memoryBin := bin("mcp-server-everything"), bin("mcp-server-memory")
	f := newFleet(t, fmt.Sprintf(`
[mcp.everything]
cmd = %q
args = ["stdio"]

[mcp.memory]
cmd = %q
env = { MEMORY_FILE_PATH = %q }
`, everythingBin, memoryBin, memFile))
	st := f.waitUpstreams("everything", "memory")

	pkg := filepath.Join(interopDir, "node_modules", "@modelcontextprotocol")
	direct := func(script string, env map[string]string, args ...string) map[string]any {
		return map[string]any{"type": "stdio", "command": nodeBin, "args": append([]string{filepath.Join(pkg, script)}, args...), "env": env}
	}
	const entity = "interop-entity"
	c := startTS(t,
		connectStep("a", f.bridge("--allow-control")),
		connectStep("b", f.bridge("--allow-control")),
		connectStep("everything", direct("server-everything/dist/index.js", nil, "stdio")),
		connectStep("memory", direct("server-memory/dist/index.js", map[string]string{"MEMORY_FILE_PATH": filepath.Join(memDir, "direct.jsonl")})),
		opStep("a", "listTools"),          // 4
		opStep("everything", "listTools"), // 5
		opStep("memory", "listTools"),     // 6
		opStep("a", "callTool", "name", "everything__echo", "args", map[string]any{"message": "hello from ts"}), // 7
		opStep("a", "callTool", "name", "memory__create_entities", "args", map[string]any{"entities": []any{
			map[string]any{"name": entity, "entityType": "test", "observations": []string{"made through the broker"}},
		}}), // 8
		opStep("b", "callTool", "name", "memory__open_nodes", "args", map[string]any{"names": []string{entity}}), // 9
		opStep("a", "callTool", "name", "everything__echo", "args", map[string]any{}),                            // 10: upstream error
		opStep("everything", "callTool", "name", "echo", "args", map[string]any{}),                               // 11: the same, direct
		opStep("b", "callTool", "name", "everything__trigger-long-running-operation",
			"args", map[string]any{"duration": 1, "steps": 4}, "progress", true), // 12
		opStep("a", "callTool", "name", "everything__get-sum", "args", map[string]any{"a": 2, "b": 40}), // 13: a still works
		opStep("", "pause"), // 14
	)
	steps := make([]step, 0, 16)
	for range 15 {
		steps = append(steps, c.next())
	}
	for i := range 4 {
		var info struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		c.must(steps[i], &info)
		if i < 2 && info.ProtocolVersion != "2025-11-25" {
			t.Errorf("bridge session %s negotiated %q, want 2025-11-25", steps[i].Conn, info.ProtocolVersion)
		}
	}

	// Two bridge sessions (and the direct clients) are open: one daemon-run
	// process per upstream, the one mcp status reports.
	daemonPID := f.Cmd.Process.Pid
	now := f.upstreams()
	for key, path := range map[string]string{"everything": everythingBin, "memory": memoryBin} {
		u := now[key]
		if u.State != "running" || u.Tools == 0 {
			t.Errorf("mcp status %s: %+v, want running with tools > 0", key, u)
		}
		if u.PID != st[key].PID || u.Restarts != 0 {
			t.Errorf("mcp status %s: pid %d restarts %d, was pid %d before the sessions", key, u.PID, u.Restarts, st[key].PID)
		}
		pids := procsRunning(t, daemonPID, path)
		if len(pids) != 1 || pids[0] != u.PID {
			t.Errorf("%s: processes under the daemon running %s: %v, want exactly [%d] with 2 sessions open", key, path, pids, u.PID)
		}
	}
	c.resume()
	steps = append(steps, c.next()) // 15: resume
	c.must(steps[15], nil)
	c.wait()
	if testing.Verbose() {
		t.Log(c.transcript())
	}

	// Namespacing, with schemas passed through unchanged.
	viaBroker := toolsByName(t, c, steps[4])
	for _, d := range []struct {
		key string
		s   step
	}{{"everything", steps[5]}, {"memory", steps[6]}} {
		upstream := toolsByName(t, c, d.s)
		if len(upstream) == 0 {
			t.Fatalf("%s lists no tools directly", d.key)
		}
		for name, raw := range upstream {
			got, ok := viaBroker[d.key+"__"+name]
			if !ok {
				t.Errorf("tool %s of %s is not listed through the broker as %s__%s", name, d.key, d.key, name)
				continue
			}
			// Not "execution": the broker drops it (the go-sdk Tool has no
			// such field), so simulate-research-query loses its
			// taskSupport "required"; harness serves no tasks anyway.
			for _, field := range []string{"inputSchema", "outputSchema", "description", "title", "annotations", "_meta", "icons"} {
				if same, a, b := sameField(raw, got, field); !same {
					t.Errorf("%s__%s: %s changed by the broker:\n direct: %s\n broker: %s", d.key, name, field, a, b)
				}
			}
		}
	}
	for _, want := range []string{"everything__echo", "everything__trigger-long-running-operation", "memory__create_entities", "memory__open_nodes", "harness_list"} {
		if _, ok := viaBroker[want]; !ok {
			t.Errorf("session lists no %s", want)
		}
	}

	var echo toolResult
	c.must(steps[7], &echo)
	if echo.IsError || echo.text() != "Echo: hello from ts" {
		t.Errorf("everything__echo: isError=%v text %q, want \"Echo: hello from ts\"", echo.IsError, echo.text())
	}

	var created, opened toolResult
	c.must(steps[8], &created)
	c.must(steps[9], &opened)
	if created.IsError || opened.IsError {
		t.Fatalf("memory: create isError=%v %q; open isError=%v %q", created.IsError, created.text(), opened.IsError, opened.text())
	}
	var graph struct {
		Entities []struct {
			Name         string   `json:"name"`
			Observations []string `json:"observations"`
		} `json:"entities"`
	}
	if err := json.Unmarshal(opened.StructuredContent, &graph); err != nil || len(graph.Entities) != 1 ||
		graph.Entities[0].Name != entity || !slices.Contains(graph.Entities[0].Observations, "made through the broker") {
		t.Errorf("memory__open_nodes from session b after create from session a: %s (%v)", opened.StructuredContent, err)
	}
	if b, err := os.ReadFile(memFile); err != nil || !strings.Contains(string(b), entity) {
		t.Errorf("MEMORY_FILE_PATH %s (the env of [mcp.memory]) does not hold the entity: %q %v", memFile, b, err)
	}

	var viaErr, directErr toolResult
	c.must(steps[10], &viaErr) // an upstream error is a result, not a protocol error
	c.must(steps[11], &directErr)
	if !directErr.IsError || directErr.text() == "" {
		t.Fatalf("direct echo without message: isError=%v %q: the upstream no longer errors here", directErr.IsError, directErr.text())
	}
	if !viaErr.IsError || !strings.Contains(viaErr.text(), "everything") || !strings.Contains(viaErr.text(), directErr.text()) {
		t.Errorf("everything__echo without message: isError=%v text %q; want isError naming upstream everything and keeping %q",
			viaErr.IsError, viaErr.text(), directErr.text())
	}

	var long toolResult
	c.must(steps[12], &long)
	if long.IsError || !strings.Contains(long.text(), "Long running operation completed") {
		t.Errorf("long-running operation: isError=%v %q", long.IsError, long.text())
	}
	// The server sends progress 1..4 a quarter second apart, the last one
	// right before its result. 1..3 must arrive, in order, with their
	// total. The last one is often lost (see lastProgressNote); set
	// HARNESS_INTEROP_STRICT_PROGRESS=1 to require it.
	p := steps[12].Progress
	var seen []float64
	for _, n := range p {
		if n.Total != 4 {
			t.Errorf("progress notification %+v: total is not 4", n)
		}
		seen = append(seen, n.Progress)
	}
	switch {
	case slices.Equal(seen, []float64{1, 2, 3, 4}):
	case slices.Equal(seen, []float64{1, 2, 3}) && os.Getenv("HARNESS_INTEROP_STRICT_PROGRESS") != "1":
		t.Logf("progress 4/4 lost: %s", lastProgressNote)
	default:
		t.Errorf("progress notifications through the broker: %v, want 1 2 3 4 (of 4)\n%s\ndaemon log:\n%s", seen, c.transcript(), f.Log())
	}

	var sum toolResult
	c.must(steps[13], &sum)
	if sum.IsError || !strings.Contains(sum.text(), "42") {
		t.Errorf("everything__get-sum after the upstream error: isError=%v %q", sum.IsError, sum.text())
	}
}

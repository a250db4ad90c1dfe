package session

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/fdtest"
	"github.com/harness-dev/harness/internal/mcp/mcptest"
	"github.com/harness-dev/harness/internal/traceparent"
)

// agentOps fakes the operations a delegation task uses: delegate blocks
// until finish (or its context ends), wait and answer follow a fake
// agent's state, and every call is recorded.
type agentOps struct {
	mu      sync.Mutex
	state   api.AgentState
	prompt  uint64
	changed chan struct{}
	finish  chan struct{}
	calls   []mcptest.Call
	// promptsLeft are the prompts the agent comes to straight after an
	// answer, before it goes on working.
	promptsLeft int
}

func newAgentOps() *agentOps {
	return &agentOps{state: api.AgentWorking, changed: make(chan struct{}), finish: make(chan struct{})}
}

func (a *agentOps) set(s api.AgentState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.state = s
	if s == api.AgentWaiting {
		a.prompt++
	}
	close(a.changed)
	a.changed = make(chan struct{})
}

func (a *agentOps) ops(op string) []mcptest.Call {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []mcptest.Call
	for _, c := range a.calls {
		if c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

func (a *agentOps) view() api.AgentView {
	v := api.AgentView{Agent: "claude-code", AgentState: a.state}
	if a.state == api.AgentWaiting {
		v.Prompt, v.Choices, v.PromptID = "Bash command\ntouch made-by-agent\nDo you want to proceed?", []string{"Yes", "No"}, a.prompt
	}
	return v
}

func (a *agentOps) Call(ctx context.Context, caller api.Caller, op string, args json.RawMessage) (any, error) {
	a.mu.Lock()
	a.calls = append(a.calls, mcptest.Call{Caller: caller, Op: op, Args: string(args)})
	a.mu.Unlock()
	switch op {
	case api.OpDelegate:
		select {
		case <-a.finish:
			return api.DelegateResult{Name: "dev", Status: api.DelegateCompleted, Typed: true, Answer: "made it"}, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("delegate dev: %w", ctx.Err())
		}
	case api.OpWait:
		var w api.WaitArgs
		if err := json.Unmarshal(args, &w); err != nil {
			return nil, err
		}
		timeout := time.After(time.Duration(w.TimeoutS * float64(time.Second)))
		for {
			a.mu.Lock()
			v, changed := a.view(), a.changed
			a.mu.Unlock()
			if slices.Contains(w.State, v.AgentState) {
				return api.WaitResult{Name: w.Name, AgentView: v}, nil
			}
			select {
			case <-changed:
			case <-timeout:
				return api.WaitResult{Name: w.Name, TimedOut: true, AgentView: v}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	case api.OpAnswer:
		a.mu.Lock()
		again := a.promptsLeft > 0
		if again {
			a.promptsLeft--
		}
		a.mu.Unlock()
		if again {
			a.set(api.AgentWaiting) // straight to its next prompt
			return api.AnswerResult{Name: "dev", Choice: "Yes", Number: 1}, nil
		}
		a.set(api.AgentWorking)
		return api.AnswerResult{Name: "dev", Choice: "Yes", Number: 1}, nil
	}
	return map[string]any{"op": op}, nil
}

// linkTracer records the delegations telemetry is told to link.
type linkTracer struct {
	mu    sync.Mutex
	links map[string]traceparent.TP
}

func (l *linkTracer) CallParent(string) (traceparent.TP, bool) { return traceparent.TP{}, false }

func (l *linkTracer) LinkNextTurn(harness string, from traceparent.TP) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.links[harness] = from
}

// rawClient speaks newline-delimited JSON-RPC to a session, as a client
// with task support that the go-sdk cannot be.
type rawClient struct {
	t    *testing.T
	conn net.Conn
	in   chan map[string]json.RawMessage
	mu   sync.Mutex
	next int
}

func (e *taskEnv) dial(t *testing.T, id Identity, caps string) *rawClient {
	t.Helper()
	server, client := fdtest.SocketPair(t)
	served := make(chan error, 1)
	go func() { served <- e.m.Serve(context.Background(), server, id) }()
	c := &rawClient{t: t, conn: client, in: make(chan map[string]json.RawMessage, 64)}
	go func() {
		defer close(c.in)
		sc := bufio.NewScanner(client)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				c.in <- m
			}
		}
	}()
	t.Cleanup(func() {
		client.Close()
		<-served
	})
	c.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"raw","version":"0"}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

func (c *rawClient) send(line string) {
	c.t.Helper()
	if _, err := c.conn.Write([]byte(line + "\n")); err != nil {
		c.t.Fatal(err)
	}
}

// start sends a request and returns its id.
func (c *rawClient) start(method, params string) int {
	c.mu.Lock()
	c.next++
	id := c.next
	c.mu.Unlock()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	return id
}

// await reads until the answer to id comes, handing any request of the
// server's to onRequest (nil: fail).
func (c *rawClient) await(id int, onRequest func(map[string]json.RawMessage)) map[string]json.RawMessage {
	c.t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case m, ok := <-c.in:
			if !ok {
				c.t.Fatal("session closed")
			}
			if _, isReq := m["method"]; isReq {
				if _, hasID := m["id"]; hasID {
					if onRequest == nil {
						c.t.Fatalf("unexpected server request %s", m["method"])
					}
					onRequest(m)
				}
				continue
			}
			if string(m["id"]) == fmt.Sprint(id) {
				return m
			}
		case <-deadline:
			c.t.Fatalf("no answer to request %d", id)
		}
	}
}

func (c *rawClient) call(method, params string) map[string]json.RawMessage {
	c.t.Helper()
	return c.await(c.start(method, params), nil)
}

// result decodes an answer's result into v, failing on an error.
func (c *rawClient) result(m map[string]json.RawMessage, v any) {
	c.t.Helper()
	if e, ok := m["error"]; ok {
		c.t.Fatalf("error answer: %s", e)
	}
	if err := json.Unmarshal(m["result"], v); err != nil {
		c.t.Fatalf("result %s: %v", m["result"], err)
	}
}

type taskEnv struct {
	ops  *agentOps
	auth *mcptest.Auth
	m    *Manager
}

func newTaskEnv(t *testing.T) *taskEnv {
	t.Helper()
	e := &taskEnv{ops: newAgentOps(), auth: mcptest.NewAuth()}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	e.m = NewManager(e.ops, e.auth, nil, nil, logger, "test")
	t.Cleanup(e.m.Close)
	return e
}

const callerTrace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

const withTasks = `{"elicitation":{},"tasks":{"requests":{"elicitation":{"create":{}}}}}`

// delegateTask asks for harness_delegate as a task and returns its id.
func (c *rawClient) delegateTask(ttlMS int) string {
	c.t.Helper()
	var created struct {
		Task taskInfo       `json:"task"`
		Meta map[string]any `json:"_meta"`
	}
	c.result(c.call("tools/call", fmt.Sprintf(`{"name":"harness_delegate","arguments":{"name":"dev","prompt":"make a file"},"task":{"ttl":%d},"_meta":{"traceparent":%q}}`, ttlMS, callerTrace)), &created)
	if now, _ := created.Meta[immediateResponseKey].(string); created.Task.TaskID == "" || created.Task.Status != taskWorking || !strings.Contains(now, created.Task.TaskID) {
		c.t.Fatalf("created task %+v", created.Task)
	}
	return created.Task.TaskID
}

// pollUntil polls tasks/get until the task has status.
func (c *rawClient) pollUntil(id, status string) taskInfo {
	c.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		var ti taskInfo
		c.result(c.call("tasks/get", fmt.Sprintf(`{"taskId":%q}`, id)), &ti)
		if ti.Status == status {
			return ti
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s is %s (%s), want %s", id, ti.Status, ti.StatusMessage, status)
		}
		time.Sleep(20 * time.Millisecond) // polling is the protocol's way
	}
}

// TestScenario_DelegateTaskAsksThroughElicitationAndCompletes: a client
// with tasks gets a task at once; the agent's prompt makes it
// input_required with the command named; tasks/result brings the question
// as an elicitation tied to the task, whose answer answers the agent;
// the task completes with the delegation's result, and a cancel after
// that changes nothing.
func TestScenario_DelegateTaskAsksThroughElicitationAndCompletes(t *testing.T) {
	e := newTaskEnv(t)
	tracer := &linkTracer{links: map[string]traceparent.TP{}}
	e.m.SetCallTracer(tracer)
	e.m.SetCallRecorder(&fakeRecorder{}) // calls are traced where they are recorded
	e.auth.Add("tok-a", "boss", "write", "input", "read")
	id, err := e.m.Authenticate("tok-a", false)
	if err != nil {
		t.Fatal(err)
	}
	c := e.dial(t, id, withTasks)

	var listed struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	c.result(c.call("tools/list", `{}`), &listed)
	for _, tl := range listed.Tools {
		if string(tl["name"]) == `"harness_delegate"` && string(tl["execution"]) != `{"taskSupport":"optional"}` {
			t.Fatalf("harness_delegate execution = %s", tl["execution"])
		}
	}

	task := c.delegateTask(60000)
	c.pollUntil(task, taskWorking)
	e.ops.set(api.AgentWaiting)
	ti := c.pollUntil(task, taskInputRequired)
	if !strings.Contains(ti.StatusMessage, "touch made-by-agent") {
		t.Fatalf("input_required message %q does not name the command", ti.StatusMessage)
	}

	rid := c.start("tasks/result", fmt.Sprintf(`{"taskId":%q}`, task))
	asked := 0
	res := c.await(rid, func(req map[string]json.RawMessage) {
		asked++
		var p struct {
			Message string         `json:"message"`
			Meta    map[string]any `json:"_meta"`
		}
		_ = json.Unmarshal(req["params"], &p)
		if string(req["method"]) != `"elicitation/create"` || !strings.Contains(p.Message, "touch made-by-agent") {
			t.Errorf("server asked %s: %s", req["method"], req["params"])
		}
		if rel, _ := p.Meta[relatedTaskKey].(map[string]any); rel["taskId"] != task {
			t.Errorf("elicitation _meta %v is not tied to task %s", p.Meta, task)
		}
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"choice":"Yes"}}}`, req["id"]))
		// The answer reaches the agent; then its turn ends.
		go func() {
			deadline := time.Now().Add(waitFor)
			for len(e.ops.ops(api.OpAnswer)) == 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			close(e.ops.finish)
		}()
	})
	if asked != 1 {
		t.Fatalf("elicitations = %d, want 1", asked)
	}
	var out struct {
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
		Meta              map[string]any `json:"_meta"`
	}
	c.result(res, &out)
	if out.IsError || out.StructuredContent["answer"] != "made it" || out.Meta[relatedTaskKey] == nil {
		t.Fatalf("tasks/result = %s", res["result"])
	}
	answers := e.ops.ops(api.OpAnswer)
	if len(answers) != 1 || !strings.Contains(answers[0].Args, `"choice":"Yes"`) || !strings.Contains(answers[0].Args, `"prompt_id":1`) {
		t.Fatalf("answers = %+v", answers)
	}
	c.pollUntil(task, taskCompleted)
	// The delegated turn links to the call's own span, in the caller's trace.
	tracer.mu.Lock()
	link, linked := tracer.links["dev"]
	tracer.mu.Unlock()
	if caller, _ := traceparent.Parse(callerTrace); !linked || link.TraceID != caller.TraceID || link.SpanID == caller.SpanID {
		t.Fatalf("link %v (%v), want a child of %s", link, linked, callerTrace)
	}

	cancel := c.call("tasks/cancel", fmt.Sprintf(`{"taskId":%q}`, task))
	if !strings.Contains(string(cancel["error"]), `-32602`) || !strings.Contains(string(cancel["error"]), `"status":"completed"`) {
		t.Fatalf("cancel of a completed task = %s", cancel["error"])
	}
	if n := len(e.ops.ops(api.OpStop)); n != 0 {
		t.Fatalf("stop calls = %d after cancelling a finished task", n)
	}
}

// TestScenario_DelegateTaskIsItsOwnersOnly: another token's session can
// neither see, list, read nor cancel a task; its owner can cancel it,
// which stops the run.
func TestScenario_DelegateTaskIsItsOwnersOnly(t *testing.T) {
	e := newTaskEnv(t)
	e.auth.Add("tok-a", "boss", "write", "input", "read")
	e.auth.Add("tok-b", "other", "write", "input", "read")
	ida, _ := e.m.Authenticate("tok-a", false)
	idb, _ := e.m.Authenticate("tok-b", false)
	a, b := e.dial(t, ida, withTasks), e.dial(t, idb, withTasks)

	task := a.delegateTask(60000)
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		ans := b.call(m, fmt.Sprintf(`{"taskId":%q}`, task))
		if !strings.Contains(string(ans["error"]), "task not found") {
			t.Fatalf("%s of another token's task = %s %s", m, ans["error"], ans["result"])
		}
	}
	var list taskListResult
	b.result(b.call("tasks/list", `{}`), &list)
	if len(list.Tasks) != 0 {
		t.Fatalf("other token lists %+v", list.Tasks)
	}
	a.result(a.call("tasks/list", `{}`), &list)
	if len(list.Tasks) != 1 || list.Tasks[0].TaskID != task {
		t.Fatalf("owner lists %+v", list.Tasks)
	}
	// A second session of the same token is the same owner.
	a2 := e.dial(t, ida, withTasks)
	var ti taskInfo
	a2.result(a2.call("tasks/cancel", fmt.Sprintf(`{"taskId":%q}`, task)), &ti)
	if ti.Status != taskCancelled {
		t.Fatalf("cancel = %+v", ti)
	}
	stops := e.ops.ops(api.OpStop)
	if len(stops) != 1 || !strings.Contains(stops[0].Args, `"dev"`) {
		t.Fatalf("stop calls = %+v", stops)
	}
	var res struct {
		IsError bool `json:"isError"`
	}
	a.result(a.call("tasks/result", fmt.Sprintf(`{"taskId":%q}`, task)), &res)
	if !res.IsError {
		t.Fatal("a cancelled task's result is not an error")
	}
}

// TestScenario_DelegateTaskWithoutInputGrantReportsAndExpires: a caller
// without input sees the wait (and why it cannot answer), is never asked,
// and a task nobody answers fails at its ttl saying why, the agent left
// waiting rather than stopped.
func TestScenario_DelegateTaskWithoutInputGrantReportsAndExpires(t *testing.T) {
	e := newTaskEnv(t)
	e.auth.Add("tok-w", "boss", "write", "read")
	id, _ := e.m.Authenticate("tok-w", false)
	c := e.dial(t, id, withTasks)
	task := c.delegateTask(1500)
	e.ops.set(api.AgentWaiting)
	ti := c.pollUntil(task, taskInputRequired)
	if !strings.Contains(ti.StatusMessage, "no input grant") {
		t.Fatalf("message %q does not say the caller cannot answer", ti.StatusMessage)
	}
	// tasks/result blocks to the end, asking nothing (await fails on a
	// server request).
	res := c.await(c.start("tasks/result", fmt.Sprintf(`{"taskId":%q}`, task)), nil)
	if _, ok := res["result"]; !ok {
		t.Fatalf("tasks/result = %s", res["error"])
	}
	ti = c.pollUntil(task, taskFailed)
	if !strings.Contains(ti.StatusMessage, "ttl") || !strings.Contains(ti.StatusMessage, "touch made-by-agent") || !strings.Contains(ti.StatusMessage, "not stopped") {
		t.Fatalf("failed message %q", ti.StatusMessage)
	}
	if len(e.ops.ops(api.OpAnswer)) != 0 || len(e.ops.ops(api.OpStop)) != 0 {
		t.Fatalf("the agent was answered or stopped: %+v", e.ops.calls)
	}
}

// TestScenario_TaskOnAnotherToolIsRefused: only harness_delegate runs as
// a task; the initialize answer declares tasks.
func TestScenario_TaskOnAnotherToolIsRefused(t *testing.T) {
	e := newTaskEnv(t)
	e.auth.Add("tok-a", "boss", "write", "input", "read")
	id, _ := e.m.Authenticate("tok-a", false)
	server, client := fdtest.SocketPair(t)
	served := make(chan error, 1)
	go func() { served <- e.m.Serve(context.Background(), server, id) }()
	defer func() { client.Close(); <-served }()
	if _, err := client.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(client)
	if !sc.Scan() || !strings.Contains(sc.Text(), `"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`) {
		t.Fatalf("initialize answer %s", sc.Text())
	}
	_, _ = client.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"harness_list","arguments":{},"task":{}}}` + "\n"))
	if !sc.Scan() || !strings.Contains(sc.Text(), `-32601`) {
		t.Fatalf("task on harness_list = %s", sc.Text())
	}
}

// TestScenario_DelegateTaskAsksEachPromptOnce: an agent that comes to a
// second prompt straight after the first answer (never seen working in
// between) is asked again, for the new prompt, and each answer names its
// own prompt.
func TestScenario_DelegateTaskAsksEachPromptOnce(t *testing.T) {
	e := newTaskEnv(t)
	e.ops.promptsLeft = 1
	e.auth.Add("tok-a", "boss", "write", "input", "read")
	id, _ := e.m.Authenticate("tok-a", false)
	c := e.dial(t, id, withTasks)
	task := c.delegateTask(60000)
	e.ops.set(api.AgentWaiting)
	c.pollUntil(task, taskInputRequired)
	rid := c.start("tasks/result", fmt.Sprintf(`{"taskId":%q}`, task))
	asked := 0
	c.await(rid, func(req map[string]json.RawMessage) {
		asked++
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"choice":"Yes"}}}`, req["id"]))
		if asked == 2 {
			go func() {
				deadline := time.Now().Add(waitFor)
				for len(e.ops.ops(api.OpAnswer)) < 2 && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				close(e.ops.finish)
			}()
		}
	})
	answers := e.ops.ops(api.OpAnswer)
	if asked != 2 || len(answers) != 2 || !strings.Contains(answers[0].Args, `"prompt_id":1`) || !strings.Contains(answers[1].Args, `"prompt_id":2`) {
		t.Fatalf("asked %d times, answers %+v", asked, answers)
	}
}

// TestScenario_DelegateTaskWithoutWriteIsRefusedUntasked: a caller
// without write is refused as the blocking call is, and no task is made.
func TestScenario_DelegateTaskWithoutWriteIsRefusedUntasked(t *testing.T) {
	e := newTaskEnv(t)
	e.auth.Add("tok-r", "viewer", "read")
	id, _ := e.m.Authenticate("tok-r", false)
	c := e.dial(t, id, withTasks)
	var res struct {
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
		Task              any            `json:"task"`
	}
	c.result(c.call("tools/call", `{"name":"harness_delegate","arguments":{"name":"dev","prompt":"x"},"task":{}}`), &res)
	if !res.IsError || res.StructuredContent["code"] != "not_permitted" || res.Task != nil {
		t.Fatalf("a read-only caller's task: %+v", res)
	}
	var list taskListResult
	c.result(c.call("tasks/list", `{}`), &list)
	if len(list.Tasks) != 0 || len(e.ops.ops(api.OpDelegate)) != 0 {
		t.Fatalf("tasks %+v, delegate calls %d", list.Tasks, len(e.ops.ops(api.OpDelegate)))
	}
}

// TestScenario_ACallersRunningTasksAreBounded: past maxRunningTasks
// running tasks a caller is told it is busy; another caller is not.
func TestScenario_ACallersRunningTasksAreBounded(t *testing.T) {
	e := newTaskEnv(t)
	e.auth.Add("tok-a", "boss", "write", "read")
	e.auth.Add("tok-b", "other", "write", "read")
	ida, _ := e.m.Authenticate("tok-a", false)
	idb, _ := e.m.Authenticate("tok-b", false)
	a, b := e.dial(t, ida, withTasks), e.dial(t, idb, withTasks)
	for range maxRunningTasks {
		a.delegateTask(60000)
	}
	var res struct {
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
	}
	a.result(a.call("tools/call", `{"name":"harness_delegate","arguments":{"name":"dev","prompt":"x"},"task":{}}`), &res)
	if !res.IsError || res.StructuredContent["code"] != "busy" {
		t.Fatalf("task past the bound: %+v", res)
	}
	b.delegateTask(60000)
}

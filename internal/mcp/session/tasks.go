package session

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/facade"
)

// MCP tasks (the 2025-11-25 `tasks` utility) for harness_delegate,
// built here because the go-sdk has none (docs/design/mcp.md, "Tasks").
// A tools/call that asks for a task is answered at once with the task;
// the delegation runs on the Manager's context, owned by the credential
// that asked (not by the session: a client may poll from a new one), and
// a watcher follows the agent's state so that a prompt it waits on makes
// the task input_required. The question goes to the client as an
// elicitation on its tasks/result stream; the client's answer answers the
// agent only under the caller's input grant, looked up when it arrives.

// Task statuses, as the protocol names them.
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

// Task methods and keys of the protocol.
const (
	methodTasksGet    = "tasks/get"
	methodTasksResult = "tasks/result"
	methodTasksList   = "tasks/list"
	methodTasksCancel = "tasks/cancel"
	relatedTaskKey    = "io.modelcontextprotocol/related-task"
	// immediateResponseKey is the CreateTaskResult _meta key of a text
	// for the model while the task runs.
	immediateResponseKey = "io.modelcontextprotocol/model-immediate-response"
)

// Bounds of a task's life: what a client may ask for in task.ttl, and
// how long a finished task stays to be read after it ended.
const (
	defaultTaskTTL = 30 * time.Minute
	minTaskTTL     = time.Second
	maxTaskTTL     = api.MaxDelegateTimeoutS * time.Second
	taskRetention  = 5 * time.Minute
	taskPoll       = 500 * time.Millisecond
	taskListPage   = 50
	// maxRunningTasks bounds one caller's tasks that have not ended: each
	// holds two goroutines and a wait on an agent.
	maxRunningTasks = 32
	// watchSlice bounds one wait of the watcher, so it looks again at a
	// task that ended without it.
	watchSlice = 30 * time.Second
)

// task is one delegation run as an MCP task.
type task struct {
	id      string
	owner   string // the credential that made it (taskOwner)
	harness string
	created time.Time
	ttl     time.Duration
	caller  api.Caller
	l       *live // the session that made it: its grant is looked up at each answer
	cancel  context.CancelFunc

	mu       sync.Mutex
	status   string
	message  string
	updated  time.Time
	ended    time.Time
	result   *mcp.CallToolResult
	question *api.AgentView // the prompt the agent waits on, while input_required
	asking   uint64         // the PromptID an elicitation is out for
	declined uint64         // the PromptID the client declined to answer
	changed  chan struct{}  // closed and replaced at every change
}

// taskInfo is the protocol's Task object.
type taskInfo struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           int64  `json:"ttl"`
	PollInterval  int64  `json:"pollInterval,omitempty"`
}

func (t *task) info() taskInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.infoLocked()
}

func (t *task) infoLocked() taskInfo {
	ti := taskInfo{
		TaskID: t.id, Status: t.status, StatusMessage: t.message,
		CreatedAt: t.created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: t.updated.UTC().Format(time.RFC3339Nano),
		TTL: t.ttl.Milliseconds(),
	}
	if !terminal(t.status) {
		ti.PollInterval = taskPoll.Milliseconds()
	}
	return ti
}

func terminal(status string) bool {
	return status == taskCompleted || status == taskFailed || status == taskCancelled
}

// setLocked moves t to status; a terminal status is never left.
func (t *task) setLocked(status, message string) bool {
	if terminal(t.status) {
		return false
	}
	t.status, t.message, t.updated = status, message, time.Now()
	if terminal(status) {
		t.ended = t.updated
		t.question = nil
	}
	close(t.changed)
	t.changed = make(chan struct{})
	return true
}

func (t *task) set(status, message string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.setLocked(status, message)
}

// tasks is a Manager's table of tasks.
type tasks struct {
	mu  sync.Mutex
	all map[string]*task
	wg  sync.WaitGroup // the goroutines of running tasks
}

// own returns the task id names if owner made it, after dropping tasks
// past their retention.
func (ts *tasks) own(owner, id string) (*task, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.pruneLocked(time.Now())
	t, ok := ts.all[id]
	if !ok || t.owner != owner {
		return nil, false // another caller's task is as unknown as a made-up id
	}
	return t, true
}

// runningLocked counts owner's tasks that have not ended.
func (ts *tasks) runningLocked(owner string) int {
	n := 0
	for _, t := range ts.all {
		t.mu.Lock()
		if t.owner == owner && !terminal(t.status) {
			n++
		}
		t.mu.Unlock()
	}
	return n
}

// pruneLocked forgets finished tasks whose ttl and retention are over.
func (ts *tasks) pruneLocked(now time.Time) {
	for id, t := range ts.all {
		t.mu.Lock()
		gone := terminal(t.status) && now.After(t.created.Add(t.ttl)) && now.After(t.ended.Add(taskRetention))
		t.mu.Unlock()
		if gone {
			delete(ts.all, id)
		}
	}
}

// taskOwner is who owns the tasks a session makes: its credential (a
// token, by hash, never kept in clear), the operator, an SSH key, or for
// an unattributed socket session the session alone.
func (l *live) taskOwner() string {
	switch {
	case l.id.Token != "":
		sum := sha256.Sum256([]byte(l.id.Token))
		return "token:" + hex.EncodeToString(sum[:])
	case l.id.Operator:
		return "operator"
	case l.id.Via != "":
		return "via:" + l.id.Via
	}
	return fmt.Sprintf("session:%p", l)
}

// caller is who a facade call of this session acts as.
func (l *live) caller() api.Caller {
	c := api.Caller{Kind: api.Session, Harness: l.id.Harness}
	switch {
	case l.id.Bridge != nil && l.id.Via != "":
		c.Door, c.Actor = api.DoorSSH, l.id.Via
	case l.id.Operator:
		c.Actor = "token:operator" // the HTTP endpoint's operator token
	}
	return c
}

// createTaskResult is the answer to a tools/call that asked for a task.
type createTaskResult struct {
	mcp.ResultBase
	Task taskInfo `json:"task"`
}

// taskTTL is the lifetime a client asked for (ms), within its bounds.
func taskTTL(req *taskRequest) time.Duration {
	if req == nil || req.TTL == nil {
		return defaultTaskTTL
	}
	d := time.Duration(*req.TTL) * time.Millisecond
	return min(max(d, minTaskTTL), maxTaskTTL)
}

// startTask answers a tools/call that asked for a task: harness_delegate
// runs as one, any other tool refuses it (its taskSupport is forbidden).
func (l *live) startTask(reqCtx context.Context, req *mcp.CallToolRequest, tr *taskRequest) (mcp.Result, error) {
	name := req.Params.Name
	t, ok := facade.Lookup(name)
	if !ok || t.Op != api.OpDelegate {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("tool %s does not run as a task (only harness_delegate does): call it without task", errcode.Clip(name, 128))}
	}
	// Refused as the blocking call is, before anything runs: a caller
	// without the grant gets no task.
	if err := l.permit(l.grant(), t.Name, api.FacadeNamespace, t.Class); err != nil {
		return l.refuse(t.Name, err), nil
	}
	args := objectArgs(req.Params.Arguments)
	var da api.DelegateArgs
	_ = json.Unmarshal(args, &da) // Validate, in callFacade, says what is wrong with them
	ttl := taskTTL(tr)
	if da.TimeoutS == 0 {
		// The delegation is bounded by the task's life, not the blocking
		// call's default.
		var m map[string]any
		if json.Unmarshal(args, &m) == nil {
			m["timeout_s"] = ttl.Seconds()
			if b, err := json.Marshal(m); err == nil {
				args = b
			}
		}
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	now := time.Now()
	// The task outlives the request but keeps its values (its trace
	// context), and ends with the Manager or its ttl.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(reqCtx), ttl)
	stop := context.AfterFunc(l.m.ctx, cancel)
	cancelAll := func() { stop(); cancel() }
	tk := &task{
		id: hex.EncodeToString(id), owner: l.taskOwner(), harness: da.Name, created: now, ttl: ttl,
		caller: l.caller(), l: l, cancel: cancelAll,
		status: taskWorking, message: "the agent is taking the prompt", updated: now, changed: make(chan struct{}),
	}
	ts := &l.m.tasks
	ts.mu.Lock()
	ts.pruneLocked(now)
	if n := ts.runningLocked(tk.owner); n >= maxRunningTasks {
		ts.mu.Unlock()
		cancelAll()
		return l.refuse(t.Name, errcode.Errorf(errcode.Busy, "harness_delegate: this caller has %d delegation tasks running, the most it may: wait for one or cancel it", n)), nil
	}
	if ts.all == nil {
		ts.all = map[string]*task{}
	}
	ts.all[tk.id] = tk
	ts.wg.Add(2)
	ts.mu.Unlock()
	l.m.log.Info("delegation task started", logkey.Session, l.label(), logkey.Harness, tk.harness, logkey.Task, tk.id)
	go func() {
		defer ts.wg.Done()
		l.runTask(ctx, tk, t, args)
	}()
	go func() {
		defer ts.wg.Done()
		l.watchTask(ctx, tk)
	}()
	res := &createTaskResult{Task: tk.info()}
	// What a host may hand its model at once while the task runs.
	res.Meta = mcp.Meta{immediateResponseKey: fmt.Sprintf("Delegated to %s as task %s: poll it with tasks/get; its answer comes with tasks/result.", tk.harness, tk.id)}
	return res, nil
}

// runTask runs the delegation as the blocking call would and settles the
// task with its result.
func (l *live) runTask(ctx context.Context, tk *task, t facade.Tool, args json.RawMessage) {
	defer tk.cancel()
	res := l.callFacade(ctx, t, args)
	status, msg := taskCompleted, "the agent's turn is done"
	var dr api.DelegateResult
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		status, msg = taskFailed, tk.expiredMessage()
	case res.IsError:
		status, msg = taskFailed, "the delegation failed: "+resultText(res)
	case json.Unmarshal(structured(res), &dr) == nil && dr.Status != api.DelegateCompleted:
		status = taskFailed
		msg = fmt.Sprintf("the delegation ended %s (agent %s)", dr.Status, dr.Agent.AgentState)
		if dr.Status == api.DelegateTimedOut {
			msg = tk.expiredMessage()
		}
	}
	tk.mu.Lock()
	settled := tk.setLocked(status, msg)
	if settled {
		tk.result = res
	}
	tk.mu.Unlock()
	if settled { // else a cancel settled it first
		l.m.log.Info("delegation task ended", logkey.Harness, tk.harness, logkey.Task, tk.id, logkey.Status, status)
	}
}

// expiredMessage says why a task ran out of time, naming the question
// the agent was left with when it was waiting on one.
func (tk *task) expiredMessage() string {
	tk.mu.Lock()
	q := tk.question
	tk.mu.Unlock()
	if q != nil {
		return fmt.Sprintf("the task's ttl of %s ran out while the agent waited for an answer nobody gave (%s); the agent is left waiting, not stopped", tk.ttl, oneLine(q.Prompt))
	}
	return fmt.Sprintf("the task's ttl of %s ran out before the agent's turn ended; the agent goes on", tk.ttl)
}

// watchTask follows the agent while the task runs: a prompt it waits on
// makes the task input_required, and leaving it makes it working again.
func (l *live) watchTask(ctx context.Context, tk *task) {
	for ctx.Err() == nil {
		w, err := l.waitState(ctx, tk, watchSlice, api.AgentWaiting)
		if err != nil || w.AgentState != api.AgentWaiting || w.PromptID == 0 {
			// Not there yet (a harness delegate is still making), gone,
			// or not waiting after all: look again shortly.
			select {
			case <-ctx.Done():
			case <-time.After(taskPoll):
			}
			continue
		}
		tk.mu.Lock()
		if tk.question == nil || tk.question.PromptID != w.PromptID {
			q := w.AgentView
			if tk.setLocked(taskInputRequired, l.waitMessage(tk, &q)) {
				tk.question = &q
			}
		}
		tk.mu.Unlock()
		// Out of the prompt, or a look again soon: an agent answered
		// that comes to its next prompt between two looks is still
		// waiting, on another prompt, which the next round sees.
		if _, err := l.waitState(ctx, tk, waitingLook, api.AgentWorking, api.AgentReady, api.AgentLimited, api.AgentError, api.AgentStarting); err != nil {
			continue
		}
		tk.mu.Lock()
		if tk.status == taskInputRequired {
			tk.setLocked(taskWorking, "the agent took the answer and goes on")
			tk.question = nil
		}
		tk.mu.Unlock()
	}
}

// waitingLook is how often a task looks again at an agent that waits.
const waitingLook = 2 * time.Second

// waitMessage is an input_required task's status message: the question,
// its choices, and whether this caller may answer.
func (l *live) waitMessage(tk *task, q *api.AgentView) string {
	msg := "the agent is waiting for a person: " + oneLine(q.Prompt)
	if len(q.Choices) > 0 {
		msg += " (choices: " + strings.Join(q.Choices, " / ") + ")"
	}
	if !l.grant().Allows(api.FacadeNamespace, api.Input) {
		msg += "; this caller has no input grant, so it cannot answer: answer with harness answer " + tk.harness
	}
	return msg
}

// waitState waits (for slice at most) for the task's harness to be in
// one of states.
func (l *live) waitState(ctx context.Context, tk *task, slice time.Duration, states ...api.AgentState) (api.WaitResult, error) {
	args, _ := json.Marshal(api.WaitArgs{Name: tk.harness, State: states, TimeoutS: slice.Seconds()})
	res, err := l.m.ops.Call(ctx, tk.caller, api.OpWait, args)
	if err != nil {
		return api.WaitResult{}, err
	}
	var w api.WaitResult
	b, err := json.Marshal(res)
	if err == nil {
		err = json.Unmarshal(b, &w)
	}
	if err == nil && w.TimedOut {
		err = context.DeadlineExceeded
	}
	return w, err
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return errcode.Clip(s, 300)
}

// structured is a result's structuredContent as JSON.
func structured(res *mcp.CallToolResult) []byte {
	if res == nil || res.StructuredContent == nil {
		return nil
	}
	if b, ok := res.StructuredContent.(json.RawMessage); ok {
		return b
	}
	b, _ := json.Marshal(res.StructuredContent)
	return b
}

// resultText is an error result's text.
func resultText(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return errcode.Clip(t.Text, 300)
		}
	}
	return "no message"
}

// endTasks waits, once the Manager's context has ended (the parent of
// every task and stateless round), for their goroutines.
func (m *Manager) endTasks() {
	m.tasks.wg.Wait()
	m.rounds.wg.Wait()
}

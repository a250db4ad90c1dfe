package session

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
)

// The tasks/* methods of the protocol, served to the owner of each task
// (tasks.go); anyone else's task id is as unknown as a made-up one.

// taskIDParams are the params of tasks/get, tasks/result and tasks/cancel.
type taskIDParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

// taskListParams are the params of tasks/list.
type taskListParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

// taskInfoResult is a Task as a method's result.
type taskInfoResult struct {
	mcp.ResultBase
	taskInfo
}

// taskListResult is the answer of tasks/list.
type taskListResult struct {
	mcp.ResultBase
	Tasks      []taskInfo `json:"tasks"`
	NextCursor string     `json:"nextCursor,omitempty"`
}

// addTaskMethods registers the tasks/* methods on the session's server.
func (l *live) addTaskMethods() {
	must := func(err error) {
		if err != nil {
			l.m.log.Error("registering a task method", logkey.Err, err) // a go-sdk that knows tasks itself
		}
	}
	must(mcp.AddReceivingCustomMethod(l.server, methodTasksGet, l.taskGet))
	must(mcp.AddReceivingCustomMethod(l.server, methodTasksResult, l.taskResult))
	must(mcp.AddReceivingCustomMethod(l.server, methodTasksList, l.taskList))
	must(mcp.AddReceivingCustomMethod(l.server, methodTasksCancel, l.taskCancel))
}

func taskNotFound(id string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("task not found: %s", errcode.Clip(id, 64))}
}

func (l *live) findTask(p *taskIDParams) (*task, error) {
	if p == nil || p.TaskID == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "taskId is required"}
	}
	tk, ok := l.m.tasks.own(l.taskOwner(), p.TaskID)
	if !ok {
		return nil, taskNotFound(p.TaskID)
	}
	return tk, nil
}

func (l *live) taskGet(_ context.Context, _ *mcp.ServerSession, p *taskIDParams) (*taskInfoResult, error) {
	tk, err := l.findTask(p)
	if err != nil {
		return nil, err
	}
	return &taskInfoResult{taskInfo: tk.info()}, nil
}

func (l *live) taskList(_ context.Context, _ *mcp.ServerSession, p *taskListParams) (*taskListResult, error) {
	owner := l.taskOwner()
	ts := &l.m.tasks
	ts.mu.Lock()
	ts.pruneLocked(time.Now())
	var mine []*task
	for _, t := range ts.all {
		if t.owner == owner {
			mine = append(mine, t)
		}
	}
	ts.mu.Unlock()
	slices.SortFunc(mine, func(a, b *task) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	from := 0
	if p != nil && p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 0 || n > len(mine) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
		}
		from = n
	}
	out := &taskListResult{Tasks: []taskInfo{}}
	for _, t := range mine[from:min(from+taskListPage, len(mine))] {
		out.Tasks = append(out.Tasks, t.info())
	}
	if from+taskListPage < len(mine) {
		out.NextCursor = strconv.Itoa(from + taskListPage)
	}
	return out, nil
}

// taskCancel stops a running task's run. A finished task is left as it
// is: the protocol's invalid-params refusal, whose data is the task.
func (l *live) taskCancel(ctx context.Context, _ *mcp.ServerSession, p *taskIDParams) (*taskInfoResult, error) {
	tk, err := l.findTask(p)
	if err != nil {
		return nil, err
	}
	tk.mu.Lock()
	if terminal(tk.status) {
		info := tk.infoLocked()
		tk.mu.Unlock()
		data, _ := json.Marshal(info)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("task %s is already %s: nothing to cancel", tk.id, info.Status), Data: data}
	}
	tk.setLocked(taskCancelled, "cancelled by request: the run was stopped")
	tk.result = errorResult(errcode.Errorf(errcode.NotRunning, "harness_delegate %s: the task was cancelled and the run stopped", tk.harness))
	tk.mu.Unlock()
	tk.cancel()
	args, _ := json.Marshal(api.NamesArgs{Names: []string{tk.harness}})
	if _, err := l.m.ops.Call(ctx, tk.caller, api.OpStop, args); err != nil {
		l.m.log.Warn("cancelled task: stopping its harness", logkey.Harness, tk.harness, logkey.Task, tk.id, logkey.Err, err)
		tk.mu.Lock()
		tk.message = "cancelled by request; stopping the run failed: " + err.Error()
		tk.mu.Unlock()
	}
	l.m.log.Info("delegation task cancelled", logkey.Session, l.label(), logkey.Harness, tk.harness, logkey.Task, tk.id)
	return &taskInfoResult{taskInfo: tk.info()}, nil
}

// taskResult blocks until the task ends and answers what the tools/call
// would have. While the agent waits on a prompt, the question goes to
// this client as an elicitation on this request's stream, when the
// caller may answer it.
func (l *live) taskResult(ctx context.Context, ss *mcp.ServerSession, p *taskIDParams) (*mcp.CallToolResult, error) {
	tk, err := l.findTask(p)
	if err != nil {
		return nil, err
	}
	// An elicitation out when the task ends is withdrawn with this call.
	actx, stop := context.WithCancel(ctx)
	var asks sync.WaitGroup
	defer asks.Wait()
	defer stop()
	for {
		tk.mu.Lock()
		status, res, changed, q := tk.status, tk.result, tk.changed, tk.question
		ask := q != nil && status == taskInputRequired && tk.asking != q.PromptID && tk.declined != q.PromptID
		if ask {
			tk.asking = q.PromptID
		}
		tk.mu.Unlock()
		if terminal(status) && res != nil {
			out := *res
			out.Meta = mcp.Meta{relatedTaskKey: map[string]any{"taskId": tk.id}}
			return &out, nil
		}
		if ask {
			asks.Add(1)
			go func() {
				defer asks.Done()
				l.askTask(actx, ss, tk, q)
			}()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// askTask sends q to the client as an elicitation tied to the task and
// answers the agent with the choice it gets back, if the caller's grant
// in force allows input. Without it the question is never sent.
func (l *live) askTask(ctx context.Context, ss *mcp.ServerSession, tk *task, q *api.AgentView) {
	done := func(declined bool) {
		tk.mu.Lock()
		if tk.asking == q.PromptID {
			tk.asking = 0
		}
		if declined {
			tk.declined = q.PromptID
		}
		tk.mu.Unlock()
	}
	if ss == nil || !l.grant().Allows(api.FacadeNamespace, api.Input) || len(q.Choices) == 0 {
		done(true)
		return
	}
	msg := fmt.Sprintf("%s is waiting for a person:\n%s", tk.harness, q.Prompt)
	er, err := ss.Elicit(ctx, &mcp.ElicitParams{
		Meta:    mcp.Meta{relatedTaskKey: map[string]any{"taskId": tk.id}},
		Message: msg,
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"choice": map[string]any{"type": "string", "title": "Answer", "enum": q.Choices, "default": firstNonEmpty(q.Suggested, q.Choices[0])},
			},
			"required": []string{"choice"},
		},
	})
	if err != nil {
		// Not an answer (the request went away, the client failed): a
		// later tasks/result asks again.
		l.m.log.Info("delegation task: elicitation", logkey.Task, tk.id, logkey.Err, err)
		done(false)
		return
	}
	if er.Action != "accept" {
		done(true) // declined or dismissed: not asked again; the agent waits
		return
	}
	choice, _ := er.Content["choice"].(string)
	// Looked up again: the grant may have changed while the person thought.
	if choice == "" || !l.grant().Allows(api.FacadeNamespace, api.Input) {
		done(true)
		return
	}
	args, _ := json.Marshal(api.AnswerArgs{Name: tk.harness, Choice: choice, PromptID: q.PromptID})
	if _, err := l.m.ops.Call(ctx, tk.caller, api.OpAnswer, args); err != nil {
		l.m.log.Info("delegation task: answering the agent", logkey.Task, tk.id, logkey.Harness, tk.harness, logkey.Err, err)
		done(true)
		return
	}
	l.m.log.Info("delegation task: answered the agent", logkey.Task, tk.id, logkey.Harness, tk.harness)
	done(false)
}

package session

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/mcp/facade"
)

// What the go-sdk would drop or cannot say about tasks, carried through
// it: a tools/call's params.task (the go-sdk decodes params into a type
// without it) is moved into _meta under taskMetaKey by the transports
// before the go-sdk reads the request (LiftTask); the initialize answer
// gains capabilities.tasks and harness_delegate's listing gains
// execution.taskSupport (taskCapsMiddleware).

// taskMetaKey is where LiftTask puts a tools/call's task params.
const taskMetaKey = "dev.harness/task"

// taskRequest is a tools/call's task params.
type taskRequest struct {
	TTL *int64 `json:"ttl,omitempty"`
}

// LiftTask rewrites one JSON-RPC message, if it is a tools/call whose
// params ask for a task, so that the go-sdk keeps the request for a task
// (in _meta). Anything else comes back unchanged, with false.
func LiftTask(msg []byte) ([]byte, bool) {
	if !bytes.Contains(msg, []byte(`"task"`)) {
		return msg, false
	}
	var env map[string]json.RawMessage
	if json.Unmarshal(msg, &env) != nil {
		return msg, false
	}
	var method string
	if json.Unmarshal(env["method"], &method) != nil || method != methodCallTool {
		return msg, false
	}
	params, ok := LiftTaskParams(env["params"])
	if !ok {
		return msg, false
	}
	env["params"] = params
	out, err := json.Marshal(env)
	if err != nil {
		return msg, false
	}
	return out, true
}

// LiftTaskParams is LiftTask for a tools/call's params alone.
func LiftTaskParams(raw json.RawMessage) (json.RawMessage, bool) {
	if !bytes.Contains(raw, []byte(`"task"`)) {
		return raw, false
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(raw, &p) != nil {
		return raw, false
	}
	task, ok := p["task"]
	if !ok || bytes.Equal(bytes.TrimSpace(task), []byte("null")) {
		return raw, false
	}
	meta := map[string]json.RawMessage{}
	if m, ok := p["_meta"]; ok && json.Unmarshal(m, &meta) != nil {
		return raw, false
	}
	meta[taskMetaKey] = task
	delete(p, "task")
	var err error
	if p["_meta"], err = json.Marshal(meta); err != nil {
		return raw, false
	}
	out, err := json.Marshal(p)
	if err != nil {
		return raw, false
	}
	return out, true
}

// taskOf takes a lifted task request out of a call's _meta.
func taskOf(req *mcp.CallToolRequest) (*taskRequest, bool) {
	if req.Params == nil || req.Params.Meta == nil {
		return nil, false
	}
	v, ok := req.Params.Meta[taskMetaKey]
	if !ok {
		return nil, false
	}
	delete(req.Params.Meta, taskMetaKey)
	tr := &taskRequest{}
	if b, err := json.Marshal(v); err == nil {
		_ = json.Unmarshal(b, tr) // a malformed ttl is the default one
	}
	return tr, true
}

// taskCapsMiddleware declares tasks in the handshake's answer and marks
// harness_delegate as a tool that may run as one.
func (l *live) taskCapsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		switch r := res.(type) {
		case *mcp.InitializeResult:
			return &tasksInitialize{r}, nil
		case *mcp.ListToolsResult:
			if delegateName := facadeName(api.OpDelegate); delegateName != "" && listsTool(r, delegateName) {
				return &tasksToolList{r, delegateName}, nil
			}
		}
		return res, err
	}
}

func facadeName(op string) string {
	for _, t := range facade.Tools() {
		if t.Op == op {
			return t.Name
		}
	}
	return ""
}

func listsTool(r *mcp.ListToolsResult, name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// tasksCapability is the server's capabilities.tasks: tools/call may be
// task-augmented; tasks/list and tasks/cancel are served.
var tasksCapability = json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)

// tasksInitialize is an initialize answer with capabilities.tasks.
type tasksInitialize struct{ *mcp.InitializeResult }

func (r *tasksInitialize) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.InitializeResult)
	if err != nil {
		return nil, err
	}
	return patchJSON(b, func(m map[string]json.RawMessage) error {
		caps := map[string]json.RawMessage{}
		if c, ok := m["capabilities"]; ok {
			if err := json.Unmarshal(c, &caps); err != nil {
				return err
			}
		}
		caps["tasks"] = tasksCapability
		c, err := json.Marshal(caps)
		m["capabilities"] = c
		return err
	})
}

// tasksToolList is a tools/list answer whose delegate tool says it may
// run as a task.
type tasksToolList struct {
	*mcp.ListToolsResult
	name string
}

func (r *tasksToolList) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.ListToolsResult)
	if err != nil {
		return nil, err
	}
	return patchJSON(b, func(m map[string]json.RawMessage) error {
		var tools []map[string]json.RawMessage
		if err := json.Unmarshal(m["tools"], &tools); err != nil {
			return err
		}
		for _, t := range tools {
			var name string
			if json.Unmarshal(t["name"], &name) == nil && name == r.name {
				t["execution"] = json.RawMessage(`{"taskSupport":"optional"}`)
			}
		}
		out, err := json.Marshal(tools)
		m["tools"] = out
		return err
	})
}

// patchJSON decodes an object, lets edit change it, and encodes it again.
func patchJSON(b []byte, edit func(map[string]json.RawMessage) error) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if err := edit(m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

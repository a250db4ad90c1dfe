// Package facade is the one registry of the MCP facade tools: the control
// operations of DESIGN §10 exposed as MCP tools. Each tool has a name in the
// reserved "harness_" namespace, a read/write/input class used for scoping, the
// control operation it calls, and a JSON Schema describing every argument.
// Arguments are passed to the control operation unchanged, so the schema
// uses the CLI's words.
package facade

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// Prefix is the reserved namespace of the facade: every facade tool is named
// Prefix + "_" + op, and config rejects upstream keys starting with Prefix so
// no upstream can shadow a facade tool.
const Prefix = "harness"

// Tool is one facade tool.
type Tool struct {
	// Name is the client-visible tool name, "harness_" + Op.
	Name string
	// Class decides which sessions may see and call the tool.
	Class api.Class
	// Op is the control operation the tool calls with its arguments unchanged.
	Op string
	// Description is shown to the model.
	Description string
	// InputSchema is a JSON Schema object describing every argument.
	InputSchema json.RawMessage
	// ResultKey, when set, names the key under which an array result is
	// wrapped, because MCP structuredContent must be an object.
	ResultKey string
}

// Schemas are written out by hand so the wire contract is visible in one
// place; additionalProperties=false turns a misspelt argument into an
// invalid_argument result instead of a silently ignored key.
const (
	noArgs     = `{"type":"object","properties":{},"additionalProperties":false}`
	nameOnly   = `{"type":"object","properties":{"name":{"type":"string","minLength":1,"description":"harness name (project/name for project harnesses)"}},"required":["name"],"additionalProperties":false}`
	logsSchema = `{"type":"object","properties":{` +
		`"name":{"type":"string","minLength":1,"description":"harness name"},` +
		`"format":{"type":"string","enum":["summary","raw"],"default":"summary","description":"summary: activity entries paged by cursor; raw: output bytes paged by offset"},` +
		`"cursor":{"type":"integer","minimum":0,"description":"summary: return only entries newer than this id (the previous next_cursor)"},` +
		`"offset":{"type":"integer","minimum":0,"description":"raw: absolute byte offset to start from (the previous next_offset)"},` +
		`"max_bytes":{"type":"integer","minimum":1,"description":"cap on the answer's size (default 256 KiB)"},` +
		`"lines":{"type":"integer","minimum":1,"description":"return at most this many trailing lines or entries"}` +
		`},"required":["name"],"additionalProperties":false}`
	runsSchema = `{"type":"object","properties":{` +
		`"name":{"type":"string","minLength":1,"description":"only runs of this harness"},` +
		`"limit":{"type":"integer","minimum":1,"description":"at most this many runs, newest first"}` +
		`},"additionalProperties":false}`
	getTrajectorySchema = `{"type":"object","properties":{` +
		`"name":{"type":"string","minLength":1,"description":"harness name"},` +
		`"run":{"type":"integer","minimum":1,"description":"run id, from harness_list_trajectories"},` +
		`"cursor":{"type":"integer","minimum":0,"description":"return only entries newer than this id (the previous next_cursor)"},` +
		`"max_bytes":{"type":"integer","minimum":1,"description":"cap on the answer's size (default 256 KiB)"}` +
		`},"required":["name","run"],"additionalProperties":false}`
	triggerSchema = `{"type":"object","properties":{` +
		`"name":{"type":"string","minLength":1,"description":"job name"},` +
		`"wait":{"type":"boolean","description":"follow the run to its end and return exit code, duration and log tail"},` +
		`"timeout_s":{"type":"integer","minimum":1,"maximum":86400,"description":"with wait: give up following after this many seconds (at most a day)"}` +
		`},"required":["name"],"additionalProperties":false}`
	sendSchema = `{"type":"object","properties":{` +
		`"name":{"type":"string","minLength":1,"description":"harness name"},` +
		`"text":{"type":"string","description":"literal text to type (sent as a bracketed paste when the program enabled it); text and keys together at most 16 KiB"},` +
		`"keys":{"type":"array","items":{"type":"string"},"description":"named keys typed after the text, in order: Enter, Tab, Esc, Up, Down, Left, Right, Backspace, Space, C-a … C-z"},` +
		`"enter":{"type":"boolean","description":"press Enter after the text and keys"}` +
		`},"required":["name"],"additionalProperties":false}`
)

var registry = []Tool{
	{Name: "harness_list", Class: api.Read, Op: api.OpList, ResultKey: "harnesses", InputSchema: json.RawMessage(noArgs),
		Description: "List every harness with its state, enabled flag, pid, restart count, last exit code, description and project."},
	{Name: "harness_describe", Class: api.Read, Op: api.OpDescribe, InputSchema: json.RawMessage(nameOnly),
		Description: "Describe one harness: the list fields plus its config, whether the config changed since it started, and its current run."},
	{Name: "harness_logs", Class: api.Read, Op: api.OpLogs, InputSchema: json.RawMessage(logsSchema),
		Description: "Poll a harness's output. summary (default) returns activity entries and next_cursor; pass it back as cursor for newer entries. raw returns output bytes with next_offset; pass it back as offset. Answers are capped and say truncated."},
	{Name: "harness_runs", Class: api.Read, Op: api.OpRuns, ResultKey: "runs", InputSchema: json.RawMessage(runsSchema),
		Description: "Run history (one run per spawn): id, harness, cause, pid, start, end, exit code or signal."},
	{Name: "harness_jobs", Class: api.Read, Op: api.OpJobs, ResultKey: "jobs", InputSchema: json.RawMessage(noArgs),
		Description: "List jobs: harnesses with a schedule or a run-to-completion restart policy."},
	{Name: "harness_triggers", Class: api.Read, Op: api.OpTriggers, ResultKey: "triggers", InputSchema: json.RawMessage(noArgs),
		Description: "List scheduled triggers with their next firing and skipped firings."},
	{Name: "harness_daemon_info", Class: api.Read, Op: api.OpDaemonInfo, InputSchema: json.RawMessage(noArgs),
		Description: "Daemon version, protocol, pid, uptime, paths, active profile and warnings."},
	{Name: "harness_list_trajectories", Class: api.Read, Op: api.OpListTrajectories, ResultKey: "trajectories", InputSchema: json.RawMessage(nameOnly),
		Description: "List the kept run transcripts of a harness that sets harvest_trajectory = true: run id, cause, start, end, exit code, entries and size."},
	{Name: "harness_get_trajectory", Class: api.Read, Op: api.OpGetTrajectory, InputSchema: json.RawMessage(getTrajectorySchema),
		Description: "Read the transcript of one run (its activity entries, kept after the run ended) of a harness that sets harvest_trajectory = true. Pass next_cursor back as cursor for later entries; answers are capped and say truncated."},
	{Name: "harness_screen", Class: api.Read, Op: api.OpScreen, InputSchema: json.RawMessage(screenSchema),
		Description: screenDescription},
	{Name: "harness_start", Class: api.Write, Op: api.OpStart, InputSchema: json.RawMessage(nameOnly),
		Description: "Start a harness (idempotent: an already running harness is left alone)."},
	{Name: "harness_stop", Class: api.Write, Op: api.OpStop, InputSchema: json.RawMessage(nameOnly),
		Description: "Stop a harness (idempotent: an already stopped harness is left alone)."},
	{Name: "harness_restart", Class: api.Write, Op: api.OpRestart, InputSchema: json.RawMessage(nameOnly),
		Description: "Restart a harness, exactly as `harness restart NAME` would."},
	{Name: "harness_trigger", Class: api.Write, Op: api.OpTrigger, InputSchema: json.RawMessage(triggerSchema),
		Description: "Start a job now. With wait, follow the run to its end (bounded by timeout_s) and return exit code, duration and log tail."},
	{Name: "harness_send", Class: api.Input, Op: api.OpSend, InputSchema: json.RawMessage(sendSchema),
		Description: "Type into a running harness's terminal, as a person at its keyboard would: text, then named keys, then Enter. Use it to answer the harness's prompts; read its screen before and after (harness_screen with idle_s)."},
}

var byName = func() map[string]int {
	m := make(map[string]int, len(registry))
	for i, t := range registry {
		m[t.Name] = i
	}
	return m
}()

// Tools returns the facade tools, read tools first. The slice and its
// schemas are copies: callers may keep or modify them freely.
func Tools() []Tool {
	out := make([]Tool, len(registry))
	for i, t := range registry {
		out[i] = t.clone()
	}
	return out
}

// Lookup returns the facade tool called name.
func Lookup(name string) (Tool, bool) {
	i, ok := byName[name]
	if !ok {
		return Tool{}, false
	}
	return registry[i].clone(), true
}

// Reserved reports whether name lies in the facade namespace, whether or not
// such a tool exists: an unknown "harness_x" is an unknown tool, never an
// upstream's.
func Reserved(name string) bool {
	return strings.HasPrefix(name, Prefix+"_")
}

func (t Tool) clone() Tool {
	t.InputSchema = bytes.Clone(t.InputSchema)
	return t
}

// resolved caches each tool's compiled schema; compiling is deterministic,
// so a failure here is a programming error caught by the package tests.
var (
	resolveOnce sync.Once
	resolvedBy  map[string]*jsonschema.Resolved
	resolveErr  error
)

func resolveAll() {
	resolvedBy = make(map[string]*jsonschema.Resolved, len(registry))
	for _, t := range registry {
		var s jsonschema.Schema
		if err := json.Unmarshal(t.InputSchema, &s); err != nil {
			resolveErr = fmt.Errorf("facade: tool %s: parse schema: %w", t.Name, err)
			return
		}
		r, err := s.Resolve(nil)
		if err != nil {
			resolveErr = fmt.Errorf("facade: tool %s: resolve schema: %w", t.Name, err)
			return
		}
		resolvedBy[t.Name] = r
	}
}

// Validate checks args against the tool's input schema. Empty or null args
// count as {}. A mismatch wraps errcode.ErrInvalidArgument and names the
// tool, so it reaches the caller as an invalid_argument result.
func (t Tool) Validate(args json.RawMessage) error {
	resolveOnce.Do(resolveAll)
	if resolveErr != nil {
		return fmt.Errorf("%w: %w", resolveErr, errcode.ErrInternal)
	}
	r, ok := resolvedBy[t.Name]
	if !ok {
		return errcode.Errorf(errcode.UnknownTool, "facade: tool %q", t.Name)
	}
	var inst any = map[string]any{}
	if trimmed := bytes.TrimSpace(args); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if err := json.Unmarshal(trimmed, &inst); err != nil {
			return errcode.Errorf(errcode.InvalidArgument, "%s: arguments are not JSON: %s", t.Name, errcode.Clip(err.Error(), 256))
		}
	}
	if err := r.Validate(inst); err != nil {
		// The validator quotes the offending value: keep a prefix only.
		return errcode.Errorf(errcode.InvalidArgument, "%s: %s", t.Name, errcode.Clip(err.Error(), 256))
	}
	return nil
}

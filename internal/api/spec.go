package api

import (
	"fmt"
	"reflect"
	"slices"
)

// Spec says what one control operation is: its name, the class a caller
// must be granted to call it, its argument and result types, and whether an
// MCP session reaches it as a facade tool. The specs are the one table every
// door checks against: control answers exactly these ops (its test holds
// the op table's types to Args and Result), the facade builds its tools and
// their input schemas from them, the CLI has a verb for each, and a grant
// (mcp_allow, a bridge's --grant, a dashboard session) is judged by Class.
type Spec struct {
	Op    string
	Class Class
	// Args and Result are the types control decodes and answers. Result is
	// `any` for an op with more than one answer shape (logs).
	Args, Result reflect.Type
	// Tool is the facade tool exposing the op to MCP sessions; nil when
	// sessions cannot call the op.
	Tool *ToolSpec
}

// ToolSpec is the MCP side of an op. The input schema is derived from the
// op's Args type (internal/mcp/facade): a field's `jsonschema` tag is its
// description, its `mcp` tag its bounds (see SchemaTag).
type ToolSpec struct {
	// Name is the client-visible name, "harness_" + the op.
	Name string
	// ResultKey names the key an array result is wrapped under, because MCP
	// structuredContent must be an object; empty for an object result.
	ResultKey string
	// Description is shown to the model.
	Description string
}

// SchemaTag is the struct tag key that bounds a facade argument, as a comma
// separated list: `required`, `minLength=N`, `minimum=X`, `maximum=X`,
// `exclusiveMinimum=X`, `enum=a|b`, `default=V`, and `only=OP` for a field
// of an argument type several ops share that only OP reads (the other ops'
// tools leave it out). A field that a facade tool must not expose says
// `-: why` (the reason is required).
const SchemaTag = "mcp"

// Door operations are answered by the socket server or a stream mode, not
// by control; they have a class (a grant is checked for them too) but no
// handler in the op table.
const (
	// OpAttach opens an attach stream (protocol mode attach). A viewer that
	// may type is Input; a read-only one is Read (AttachClass).
	OpAttach = "attach"
)

// spec is a Spec for a control op of argument type A and result type R.
func spec[A, R any](op string, class Class) Spec {
	return Spec{Op: op, Class: class, Args: reflect.TypeFor[A](), Result: reflect.TypeFor[R]()}
}

// tool exposes s as the facade tool "harness_<op>".
func (s Spec) tool(resultKey, description string) Spec {
	s.Tool = &ToolSpec{Name: "harness_" + s.Op, ResultKey: resultKey, Description: description}
	return s
}

// specs: one line per control operation (docs/design/wire.md, docs/design/mcp.md). A new op is its
// name constant, its types and a line here; control, the facade and the
// CLI's verb test then say what is missing.
var specs = []Spec{
	spec[ListArgs, []UnitInfo](OpList, Read).tool("harnesses",
		"List every harness: its state, and its agent's (with prompt and choices when waiting)."),
	spec[NameArg, Description](OpDescribe, Read).tool("",
		"Describe one harness: its list row, config (and whether it changed since it started) and current run."),
	spec[LogsArgs, any](OpLogs, Read).tool("",
		"Poll a harness's output; page on with the answer's next_cursor or next_offset. Answers are capped and say truncated."),
	spec[NamesArgs, ActionResult](OpStart, Write).tool("",
		"Start a harness; one already running is left alone."),
	spec[NamesArgs, ActionResult](OpStop, Write).tool("",
		"Stop a harness; one already stopped is left alone."),
	spec[NamesArgs, ActionResult](OpRestart, Write).tool("",
		"Stop and start a harness; also clears a failed state."),
	spec[RunsArgs, []Run](OpRuns, Read).tool("runs",
		"Run history: one run per spawn, plus skipped and missed firings, with cause, times, exit code, outcome and note."),
	spec[NoArgs, []JobInfo](OpJobs, Read).tool("jobs",
		"List jobs: harnesses with a schedule or a run-to-completion restart policy."),
	spec[NoArgs, []Trigger](OpTriggers, Read).tool("triggers",
		"Scheduled triggers: next firing and skipped firings."),
	spec[TriggerArgs, TriggerResult](OpTrigger, Write).tool("",
		"Start a job now; with wait, return its exit code, duration and log tail once it ends."),
	spec[NoArgs, []ProfileInfo](OpProfiles, Read),
	spec[NameArg, ActionResult](OpUseProfile, Write),
	spec[NoArgs, ReloadResult](OpReload, Write),
	spec[NoArgs, DaemonInfo](OpDaemonInfo, Read).tool("",
		"Daemon version, protocol, pid, uptime, paths, active profile and warnings."),
	spec[NoArgs, OK](OpShutdown, Write),
	spec[NoArgs, []UpstreamStatus](OpMCPStatus, Read),
	spec[MCPLoginArgs, MCPLoginResult](OpMCPLogin, Write),
	spec[MCPLogoutArgs, MCPLoginResult](OpMCPLogout, Write),
	spec[MCPPinsArgs, MCPPinsResult](OpMCPPins, Read),
	spec[MCPApproveArgs, MCPApproveResult](OpMCPApprove, Write),
	spec[ProjectArgs, ProjectResult](OpProjectUp, Write),
	spec[ProjectArgs, ProjectResult](OpProjectDown, Write),
	spec[NameArg, []TrajectoryInfo](OpListTrajectories, Read).tool("trajectories",
		"List the kept run transcripts of a harness (harvest_trajectory = true)."),
	spec[TrajectoryArgs, Trajectory](OpGetTrajectory, Read).tool("",
		"Read one kept run transcript; pass next_cursor back as cursor for more. Answers are capped and say truncated."),
	spec[CallsArgs, CallsResult](OpCalls, Read),
	spec[SendArgs, SendResult](OpSend, Input).tool("",
		"Type into a running harness's terminal as a person would: text, then keys, then Enter. Read its screen before and after (harness_screen with idle_s)."),
	spec[AnswerArgs, AnswerResult](OpAnswer, Input).tool("",
		"Answer a waiting agent's prompt (agent_state waiting in harness_list) with one of its choices; harness presses the keys its dialog needs. Not waiting: not_waiting; a choice not offered: invalid_argument listing them."),
	spec[ScreenArgs, Screen](OpScreen, Read).tool("", screenDescription),
	spec[HookArgs, HookResult](OpHook, Read),
	spec[TurnsArgs, TurnsResult](OpTurns, Read),
	spec[WaitArgs, WaitResult](OpWait, Read),
	spec[DelegateArgs, DelegateResult](OpDelegate, Write).tool("",
		"Hand a prompt to an agent harness and wait for its answer: typed once the agent is ready; returns when its turn ends (completed, with the agent's final answer) or at timeout_s (timed_out, with what the agent is doing, e.g. waiting for a person with its prompt and choices)."),
	spec[NotifyTestArgs, NotifyTestResult](OpNotifyTest, Write),
	spec[WorktreeRemoveArgs, WorktreeRemoveResult](OpWorktreeRemove, Write),
	spec[DiffArgs, Diff](OpDiff, Read).tool("",
		"What a harness changed in its worktree (or git workdir) against its merge base with its base: committed, staged, unstaged and untracked files with hunks. Capped; says truncated."),
	spec[ReviewArgs, ReviewResult](OpReview, Input),
	spec[LandArgs, LandResult](OpLand, Write).tool("",
		"Land a harness's work: commit what its agent left in its worktree, merge the branch into base (or push it and open a pull request), then stop the harness and remove its worktree. A conflict is refused listing the files and changes nothing."),
	spec[RunArgs, RunResult](OpRun, Input), // it runs any program: more than write (see Input)
	spec[NewArgs, NewResult](OpNew, Write).tool("",
		"Make a new harness of a known agent (harness_agents lists them) with a prompt, optionally in a git worktree of a repository of its own, and start it. It is written to harness.d/NAME.toml beside the config file and checked as a reload checks; bad input is refused with nothing written."),
	spec[RmArgs, RmResult](OpRm, Write).tool("",
		"Stop a harness made by harness_new and remove its file and its worktree; a worktree with uncommitted changes or commits not on its base is refused unless force."),
	spec[AgentsArgs, []AgentProgram](OpAgents, Read).tool("agents",
		"The agent programs harness_new can run, found on the daemon's PATH with their versions, or missing."),
	spec[AuditArgs, AuditResult](OpAudit, Read),
	// Pairing mints a credential: never a facade tool, so no MCP session
	// reaches it (the CLI over the socket does; a bridge only within its
	// own grant).
	spec[PairArgs, PairResult](OpPair, Write),
	spec[NoArgs, []DeviceInfo](OpDevices, Read),
	spec[DeviceArg, DeviceInfo](OpDevicesRevoke, Write),
}

// doorClasses are the classes of the door operations (not in specs: no
// handler in control).
var doorClasses = map[string]Class{
	OpSubscribe: Read,
	OpAttach:    Input,
}

// screenDescription tells a model what harness_screen answers.
const screenDescription = "What a running harness's terminal shows now (rows as text, cursor, title, busy or idle). With idle_s, first wait until it is quiet, to read a TUI agent's dialog once it has settled."

var specByOp = func() map[string]int {
	m := make(map[string]int, len(specs))
	for i, s := range specs {
		if _, dup := m[s.Op]; dup {
			panic(fmt.Sprintf("api: op %q has two specs", s.Op))
		}
		m[s.Op] = i
	}
	return m
}()

// Specs returns the spec of every control operation, in the order of the
// table. The slice is a copy.
func Specs() []Spec {
	out := slices.Clone(specs)
	for i := range out {
		out[i].Tool = cloneTool(out[i].Tool)
	}
	return out
}

// SpecOf returns the spec of a control operation.
func SpecOf(op string) (Spec, bool) {
	i, ok := specByOp[op]
	if !ok {
		return Spec{}, false
	}
	s := specs[i]
	s.Tool = cloneTool(s.Tool)
	return s, true
}

func cloneTool(t *ToolSpec) *ToolSpec {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// ClassOf is the class a caller must be granted to call op: a control
// operation's, or a door's (subscribe is read; attach is input, see
// AttachClass for a read-only viewer). ok is false for an unknown op, which
// no grant allows.
func ClassOf(op string) (c Class, ok bool) {
	if i, ok := specByOp[op]; ok {
		return specs[i].Class, true
	}
	c, ok = doorClasses[op]
	return c, ok
}

// AttachClass is the class of an attach stream: a viewer that may type (and
// resize) is input, a read-only viewer is read.
func AttachClass(readOnly bool) Class {
	if readOnly {
		return Read
	}
	return Input
}

// Ops lists every control operation, in the order of the spec table.
func Ops() []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Op
	}
	return out
}

// checkSpecs reports what is wrong with a spec table: an op without a known
// class, arguments that are not an object, a facade tool misnamed, without
// a description, or whose ResultKey disagrees with its result's shape.
func checkSpecs(table []Spec) []error {
	var errs []error
	for _, s := range table {
		if !slices.Contains(Classes(), s.Class) {
			errs = append(errs, fmt.Errorf("op %q: class %q is not one of %v", s.Op, s.Class, Classes()))
		}
		if s.Args == nil || s.Args.Kind() != reflect.Struct {
			errs = append(errs, fmt.Errorf("op %q: arguments %v are not a struct (a JSON object)", s.Op, s.Args))
		}
		if s.Result == nil {
			errs = append(errs, fmt.Errorf("op %q: no result type", s.Op))
		}
		if t := s.Tool; t != nil {
			if t.Name != "harness_"+s.Op {
				errs = append(errs, fmt.Errorf("op %q: tool name %q, want harness_%s", s.Op, t.Name, s.Op))
			}
			if t.Description == "" {
				errs = append(errs, fmt.Errorf("tool %s: no description", t.Name))
			}
			if isArray := s.Result != nil && s.Result.Kind() == reflect.Slice; isArray != (t.ResultKey != "") {
				errs = append(errs, fmt.Errorf("tool %s: result %v with ResultKey %q (an array result needs one, an object none)", t.Name, s.Result, t.ResultKey))
			}
		}
	}
	return errs
}

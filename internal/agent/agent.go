// Package agent knows the agent programs harness runs (docs/design/agents.md): one
// Adapter per program, each in a file of its own (claudecode.go, codex.go,
// gemini.go, opencode.go, qwen.go, copilot.go, generic.go) and registered
// by name. An adapter is data and
// small pure functions: the command names it is inferred from, the screen
// rules that say what the agent is doing, the keys that answer its
// dialogs, and how a run asks it for a prompt, a model, an
// approval mode, a turn bound, a non-interactive job or a resumed session.
//
// Nothing here starts a goroutine or touches a unit: the supervisor and
// control call these functions with what they read (a screen's rows, a
// busy/idle state, a run's options) and keep the results.
//
// Adding an agent: see "a fourth agent" in docs/design/architecture.md.
package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// Names of the built-in adapters.
const (
	ClaudeCode = "claude-code"
	Codex      = "codex"
	Gemini     = "gemini"
	Generic    = "generic"
)

// SandboxNeeds is what a sandboxed run of an agent needs.
type SandboxNeeds struct {
	// State are the agent's own state directories, writable under fs =
	// "workdir" (made if missing); StateFiles its state files, writable
	// when they exist. "~/" is the run's HOME.
	State, StateFiles []string
	// APIEnv are the variables naming the agent's model API base URL,
	// first set wins; DefaultAPI (host:port) is used when none is set.
	// network = "allow" adds it unless allow_agent_api = false.
	APIEnv     []string
	DefaultAPI string
}

// Adapter is one agent program. Name is required; every other field is
// optional, and a nil function means the agent has no such feature (the
// generic adapter has none of them).
type Adapter struct {
	// Name is the value of `agent = "…"` that selects the adapter.
	Name string
	// Commands are the base names of cmd (without directory, and without
	// a ".js"/".cmd"/".exe" suffix) that select the adapter when agent is
	// not set: "claude" for Claude Code.
	Commands []string

	// Rules read the agent's state off its screen (rules.go), first
	// match wins; with none, or when none matches, the state is the
	// floor: working while busy, ready while idle.
	Rules []Rule
	// KeysWithPaste: the agent turns bracketed paste on (DECSET 2004) in
	// the same step as it starts reading keys, and off as it exits, so a
	// prompt or dialog its rules read takes no keys while the mode is off
	// (starting). Gemini CLI draws its prompt before it reads keys, and
	// drops what is typed in between (its terminal checks leave its input
	// flowing with no reader); after a trust answer its first process
	// turns the mode off on exit and the next one on with its reader.
	KeysWithPaste bool
	// KeysAfter: the agent reads no keys for this long after its run
	// first drew, so a prompt or dialog reads as starting until then
	// (Screen.Settling). Claude Code asks its terminal for capabilities
	// at the end of its first frame and waits up to 2 s for answers
	// (2.1.328), and keys typed in that window were lost: a Down sent
	// the moment its trust dialog showed was dropped in 2 of 4 runs.
	KeysAfter time.Duration
	// EnterAfterPaste: the agent takes an Enter that comes too soon after
	// a bracketed paste for part of the paste (a newline), until a timer
	// of its own has run, so a send of text and Enter (`send --enter`, an
	// interactive run's prompt) writes the Enter on its own: once the
	// agent has read the paste and drawn after it, this long has passed
	// since that draw (the timer is due), and then its processes have gone
	// quiet, asleep with nothing left to run (the timer ran, and what it
	// set off); supervise.Typing bounds each wait. Zero: text and Enter go
	// in one write, as a terminal sends them.
	EnterAfterPaste time.Duration
	// EnterAgain: when the agent's state (ready, or limited) has not
	// changed this long after a send's Enter written apart
	// (EnterAfterPaste), the Enter went into its input as a newline or was
	// lost, and is written once more. Only for an agent
	// to which an Enter on an emptied input does nothing, so that a send
	// it did take, but showed late, comes to no harm.
	EnterAgain time.Duration
	// AnswerAfter: the agent drops the keys that answer a dialog when they
	// come within this long of the dialog's draw (a guard against keys
	// meant for what was on screen before), so `answer` waits until the
	// dialog has been seen this long before it types.
	AnswerAfter time.Duration
	// AnswerAgain: the agent may drop an answer's keys for other reasons
	// of its own, silently; when the same dialog is still on screen this
	// long after an answer was typed, it is typed again (at most three
	// times), with the keys for where the dialog's cursor is then.
	AnswerAgain time.Duration

	// Sandbox is what a sandboxed run of the agent needs
	// (docs/sandbox.md).
	Sandbox SandboxNeeds

	// Argv returns the arguments a run adds after the harness's own args
	// for o (docs/design/agents.md: prompt of a job, model, approval, max_turns,
	// resume). It returns an error wrapping ErrUnsupported for an option
	// the agent has no flag for. Nil: the agent supports no option, and
	// Args answers ErrUnsupported for any non-zero RunOptions.
	Argv func(o RunOptions) ([]string, error)
	// RunEnv returns the variables (KEY=VALUE) a run adds for o, for an
	// option the agent takes from its environment and not its argv
	// (opencode's approvals). Nil: none.
	RunEnv func(o RunOptions) []string

	// JobResult reads the machine-readable output of a non-interactive
	// run (RunOptions.Job: Claude Code's `-p --output-format
	// stream-json`, Codex's `exec --json`, Gemini's `-p
	// --output-format json`) into its result. Nil when the agent has no
	// such mode.
	JobResult func(out []byte) (JobResult, error)

	// JobRetry reads one line of a job run's output as it comes: a retry
	// the agent makes by itself of a failed model API request (Claude
	// Code's api_retry events), ok false for any other line. A job that
	// retries a usage limit is limited (RetryWatch) long before it ends.
	// Nil: the agent's job output says nothing of its retries.
	JobRetry func(line []byte) (r Retry, ok bool)

	// UsageLimit recognises a usage-limit message the agent shows or
	// writes (a screen row, an error line) and the time it says the limit
	// resets, read in now's location (a bare "resets 3pm" is the next
	// 3pm). ok is false when text is no usage-limit message; a zero until
	// with ok means the agent did not say when.
	UsageLimit func(text string, now time.Time) (until time.Time, ok bool)

	// Wiring returns what a run of the agent needs to reach harness's MCP
	// server and call `harness hook` (wire.go), in the agent's own
	// configuration format, merged with the user's configuration and never
	// written over it. Nil: the agent is not wired.
	Wiring func(spec WireSpec) (Wiring, error)
	// NoWiring, for an agent with no Wiring, says why (pi: no MCP client,
	// by design): the daemon logs it where it would have wired the run.
	NoWiring string
	// HasSession reports whether a run in dir, with the environment
	// getenv reads (HOME and the agent's own variables), has a
	// conversation to continue (RunOptions.Continue): an agent that fails
	// to start when asked to continue nothing is asked only when this is
	// true. Nil: continuing nothing is harmless for this agent.
	HasSession func(getenv func(string) string, dir string) bool

	// Hook reads one call of the agent's hooks (hook.go): the event and its
	// JSON payload, decoded. Nil: the agent has no hooks harness installs.
	Hook func(event string, payload map[string]any) HookSignal

	// Transcripts finds and reads the agent's own session records
	// (transcript.go). Nil: the agent keeps none harness reads.
	Transcripts *TranscriptSource

	// Prices are what the agent's models cost, by model name prefix
	// (longest match wins), for a run's cost_usd.
	Prices map[string]Price
}

// RunOptions are what a harness asks of one run of its agent (docs/design/agents.md).
// The zero value asks for nothing: the agent starts as the user's own
// args say.
type RunOptions struct {
	// Prompt is the task of a Job: it goes into the argv (the agent's
	// print/exec mode). An interactive run's prompt is no argument: the
	// harness types it once the agent is first ready (docs/design/agents.md), so
	// adapters ignore it when Job is false.
	Prompt string
	// Model selects the model ("" leaves the agent's default).
	Model string
	// Approval is "" (the agent's default), ApprovalAsk or ApprovalAuto.
	Approval Approval
	// MaxTurns bounds the agent's turns (0: no bound).
	MaxTurns int
	// Job runs the agent non-interactively with machine-readable output;
	// JobResult reads it.
	Job bool
	// ResumeSession continues that session (a session_id of an earlier
	// run); "" starts a new conversation unless Continue.
	ResumeSession string
	// Continue continues the most recent conversation in the run's
	// directory, for a resume whose session id is not known.
	Continue bool
}

// ValidSession reports whether id may be an agent's session id on a
// command line (ResumeSession): the three agents' ids are UUIDs or the
// like, and an id is the agent's own word (a hook's payload, a
// transcript), so one that is empty, long, or not letters, digits, '.',
// '_', ':' and '-' after a letter or digit (an option such as
// --dangerously-skip-permissions) is refused.
func ValidSession(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == ':' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// Approval is how an agent asks before it runs a tool.
type Approval string

// The approval modes a harness's agent_approval names.
const (
	// ApprovalAsk: the agent asks before every tool that changes
	// something (the dialogs harness shows as waiting(permission)).
	ApprovalAsk Approval = "ask"
	// ApprovalAuto: the agent runs tools without asking.
	ApprovalAuto Approval = "auto"
)

// JobResult is what a non-interactive run reports at its end.
type JobResult struct {
	SessionID string
	Model     string
	Result    string // the final answer's text
	IsError   bool
	Usage     Usage
	CostUSD   float64 // as the agent reports it; 0 when it does not
	// Limited is set when the run ended on a usage limit, with Until when
	// known.
	Limited bool
	Until   time.Time
}

// Usage counts a run's tokens: the wire's Tokens.
type Usage = api.Tokens

// ErrUnsupported is wrapped by Args for an option the agent cannot honour.
var ErrUnsupported = errors.New("not supported by this agent")

// Args returns the arguments a run of the agent adds for o, or an error
// wrapping ErrUnsupported when o asks for something the adapter cannot
// do. Zero options add nothing to any adapter.
func (a *Adapter) Args(o RunOptions) ([]string, error) {
	if o == (RunOptions{}) {
		return nil, nil
	}
	if a.Argv == nil {
		return nil, fmt.Errorf("agent %s: run options: %w", a.Name, ErrUnsupported)
	}
	return a.Argv(o)
}

var (
	regMu    sync.RWMutex
	registry = map[string]func() *Adapter{}
)

// Register adds the adapter called name, built by build at its first
// lookup: an adapter's rules are dozens of regular expressions, and
// compiling them at start cost every harness process (each CLI command,
// each `harness hook` an agent runs) 3.7 ms. Each adapter file registers
// itself in init. It panics on an empty or duplicate name, and an
// adapter built under another name panics at its build; that no two
// adapters claim one command is checked by a package test, which builds
// every adapter.
func Register(name string, build func() *Adapter) {
	regMu.Lock()
	defer regMu.Unlock()
	if name == "" {
		panic("agent: Register: empty name")
	}
	if _, dup := registry[name]; dup {
		panic("agent: Register: duplicate adapter " + name)
	}
	registry[name] = sync.OnceValue(func() *Adapter {
		a := build()
		if a.Name != name {
			panic(fmt.Sprintf("agent: Register: %s builds an adapter called %s", name, a.Name))
		}
		return a
	})
}

// Lookup returns the adapter registered under name.
func Lookup(name string) (*Adapter, bool) {
	regMu.RLock()
	build, ok := registry[name]
	regMu.RUnlock()
	if !ok {
		return nil, false
	}
	return build(), true
}

// MustLookup returns the adapter registered under name, or the generic
// one: for callers that hold a name config already checked.
func MustLookup(name string) *Adapter {
	if a, ok := Lookup(name); ok {
		return a
	}
	a, _ := Lookup(Generic)
	return a
}

// Names returns the registered adapter names, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Infer returns the name of the adapter for a harness whose cmd is cmd and
// that sets no agent: the adapter claiming cmd's base name, else generic.
// "/usr/local/bin/claude", "codex" and "gemini.js" are inferred; "npx"
// (whose argument names the program) and "sh" are generic.
func Infer(cmd string) string {
	base := filepath.Base(strings.TrimSpace(cmd))
	for _, ext := range []string{".js", ".mjs", ".cmd", ".exe"} {
		base = strings.TrimSuffix(base, ext)
	}
	for _, name := range Names() {
		if a, _ := Lookup(name); slices.Contains(a.Commands, base) {
			return a.Name
		}
	}
	return Generic
}

// Status is what an agent is doing: the wire's view of it.
type Status = api.AgentView

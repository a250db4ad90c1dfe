package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/harness-dev/harness/internal/agent"
)

// LimitAction is what a harness does when its agent reaches a usage
// limit (on_limit, docs/design/agents.md).
type LimitAction string

// The values of on_limit.
const (
	OnLimitPark   LimitAction = "park"   // park the run, start it again at the reset (the default)
	OnLimitStop   LimitAction = "stop"   // stop the harness
	OnLimitIgnore LimitAction = "ignore" // leave it to the agent
)

// AgentRun are the keys of what a harness asks of its agent's runs
// (docs/design/agents.md): the prompt (Prompt, or PromptFile read at every spawn),
// Model, Approval, MaxTurns, Resume (continue the last session on every
// new run) and OnLimit. Each adapter turns them into its own flags.
type AgentRun struct {
	Prompt     string
	PromptFile string
	Model      string
	Approval   agent.Approval
	MaxTurns   int
	Resume     bool
	OnLimit    LimitAction
	// LoopGuard ends a run whose agent made the same tool call this many
	// times in a row (0: off).
	LoopGuard int
}

// HasPrompt reports whether a prompt is configured.
func (a AgentRun) HasPrompt() bool { return a.Prompt != "" || a.PromptFile != "" }

// agentRunKey decodes one agent-run key into a and reports whether k was one.
func (d *decoder) agentRunKey(k string, kp []string, val any, a *AgentRun) bool {
	switch k {
	case "prompt":
		if s, ok := d.str(kp, val); ok {
			if strings.TrimSpace(s) == "" {
				d.add(kp, "is empty")
			}
			a.Prompt = s
		}
	case "prompt_file":
		// "~" expanded; a relative path is the workdir's, read at spawn.
		if s := d.path(kp, val); s != "" || val == "" {
			if strings.TrimSpace(s) == "" {
				d.add(kp, "is empty")
			}
			a.PromptFile = s
		}
	case "model":
		if s, ok := d.str(kp, val); ok {
			if strings.TrimSpace(s) == "" || strings.ContainsAny(s, " \t\n") {
				d.add(kp, "invalid model %q", s)
			}
			a.Model = s
		}
	case "approval":
		if s, ok := d.str(kp, val); ok {
			switch ap := agent.Approval(s); ap {
			case agent.ApprovalAsk, agent.ApprovalAuto:
				a.Approval = ap
			default:
				d.add(kp, `invalid approval %q (want "ask" or "auto")`, s)
			}
		}
	case "max_turns":
		a.MaxTurns = d.count(kp, val, 1, 100000)
	case "resume":
		a.Resume = d.boolean(kp, val)
	case "on_limit":
		if s, ok := d.str(kp, val); ok {
			switch l := LimitAction(s); l {
			case OnLimitPark, OnLimitStop, OnLimitIgnore:
				a.OnLimit = l
			default:
				d.add(kp, `invalid on_limit %q (want "park", "stop" or "ignore")`, s)
			}
		}
	case "loop_guard":
		a.LoopGuard = d.count(kp, val, 2, 10000)
	default:
		return false
	}
	return true
}

// checkAgentRun holds the agent-run keys to what the harness's adapter
// can do: an option it has no flag for is an error at its line, and keys
// on a generic harness (no adapter to honour them) are warnings, not
// silent no-ops.
func (d *decoder) checkAgentRun(path []string, t map[string]any, h *Harness) {
	a := &h.AgentRun
	if a.OnLimit == "" {
		a.OnLimit = OnLimitPark
	}
	if h.Project != "" && a.Approval == agent.ApprovalAuto {
		// Running tools without asking is authority: a cloned repository
		// must not grant it to itself.
		d.add(child(path, "approval"), `"auto" is %s`, globalOnly)
	}
	if a.Prompt != "" && a.PromptFile != "" {
		d.add(child(path, "prompt_file"), "cannot be combined with prompt")
	}
	if h.Agent == agent.Generic {
		for _, k := range []string{"prompt", "prompt_file", "model", "approval", "max_turns", "resume", "on_limit", "loop_guard"} {
			if _, ok := t[k]; ok {
				d.warn(child(path, k), "has no effect: %q is a generic harness (set agent = \"claude-code\", \"codex\" or \"gemini\")", h.Cmd)
			}
		}
		return
	}
	ad := agent.MustLookup(h.Agent)
	// Each option alone, so the error names the key.
	for _, c := range []struct {
		key string
		o   agent.RunOptions
	}{
		{"model", agent.RunOptions{Model: a.Model}},
		{"approval", agent.RunOptions{Approval: a.Approval}},
		{"max_turns", agent.RunOptions{MaxTurns: a.MaxTurns}},
		{"resume", agent.RunOptions{Continue: a.Resume}},
		{"prompt", agent.RunOptions{Prompt: a.Prompt + a.PromptFile, Job: h.IsJob() && a.HasPrompt()}},
	} {
		if c.o == (agent.RunOptions{}) {
			continue
		}
		if _, err := ad.Args(c.o); err != nil {
			key := c.key
			if key == "prompt" && a.PromptFile != "" {
				key = "prompt_file"
			}
			msg := err.Error()
			if errors.Is(err, agent.ErrUnsupported) {
				msg = fmt.Sprintf("agent %s has no flag for it", h.Agent)
			}
			d.add(child(path, key), "%s", msg)
		}
	}
}

package interop

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/agent/modelapi"
)

// Real agent CLIs from npm (interop/tui/package-lock.json) run as
// harnesses against the scripted model API of internal/agent/modelapi on
// loopback, each in its own HOME (agents-offline.md).

// agentSpec is one agent under test: its adapter name, npm package,
// executable and the args that make it ask before running a command.
type agentSpec struct {
	agent, pkg, bin string
	args            []string
	// prompt is a phrase of its input prompt, shown when it is ready.
	prompt string
}

var (
	claudeSpec = agentSpec{"claude-code", "@anthropic-ai/claude-code", "claude", []string{"--permission-mode", "default"}, "❯"}
	codexSpec  = agentSpec{"codex", "@openai/codex", "codex", []string{"--no-daemon", "-a", "on-request"}, "Ask Codex"}
	geminiSpec = agentSpec{"gemini", "@google/gemini-cli", "gemini", nil, "Type your message"}
)

// agentFleet is a tuiFleet whose agent talks to a scripted model server.
type agentFleet struct {
	*tuiFleet
	api  *modelapi.Server
	work string
}

// newAgentFleet starts spec's agent as harness spec.bin against a new
// scripted model server.
func newAgentFleet(t *testing.T, spec agentSpec, o modelapi.AgentOptions) *agentFleet {
	t.Helper()
	srv, err := modelapi.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	af := &agentFleet{api: srv}
	af.tuiFleet = newTUIFleetEnv(t, spec.bin, spec.pkg, "work-"+spec.bin, tuiBin(t, spec.bin), func(home, work string) string {
		af.work = work
		env, err := srv.AgentEnv(spec.agent, home, work, o)
		if err != nil {
			t.Fatal(err)
		}
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(env)) {
			kv = append(kv, fmt.Sprintf("%s = %q", k, env[k]))
		}
		return "{ " + strings.Join(kv, ", ") + " }"
	}, spec.args...)
	return af
}

// screenHas waits until the screen shows every phrase.
func (af *agentFleet) screenHas(what string, phrases ...string) tuiScreen {
	af.t.Helper()
	return af.settle(what, func(s tuiScreen) bool {
		text := strings.Join(s.Lines, "\n")
		for _, p := range phrases {
			if !strings.Contains(text, p) {
				return false
			}
		}
		return true
	})
}

// ask types a prompt into the agent and presses Enter.
func (af *agentFleet) ask(prompt string) {
	af.t.Helper()
	if out, errOut, code := af.run("send", af.name, prompt); code != 0 {
		af.t.Fatalf("send: exit %d: %s%s", code, out, errOut)
	}
	// Enter once the text shows and the agent has settled: a TUI may take
	// an Enter right after a paste as part of it (Gemini CLI does).
	af.screenHas("the typed prompt", prompt)
	if out, errOut, code := af.run("send", af.name, "--key", "Enter"); code != 0 {
		af.t.Fatalf("send Enter: exit %d: %s%s", code, out, errOut)
	}
}

// mainRequest waits for the agent's n-th (0-based) main request to the
// model server.
func (af *agentFleet) mainRequest(n int) modelapi.Request {
	af.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seen := 0
	r, _, err := af.api.WaitRequest(ctx, 0, func(r modelapi.Request) bool {
		if !r.Main {
			return false
		}
		seen++
		return seen == n+1
	})
	if err != nil {
		var seen []string
		for _, r := range af.api.Requests() {
			seen = append(seen, fmt.Sprintf("%s %s main=%v %.200s", r.Method, r.Path, r.Main, r.Body))
		}
		af.t.Fatalf("no main request %d from %s: %v; requests:\n%s\nscreen %s", n, af.name, err, strings.Join(seen, "\n"), af.screen())
	}
	return r
}

// TestAgent_ScriptedModelAnswersEachAgent: each agent, trusted, reaches
// its prompt, sends a prompt to the scripted server in its own wire format
// and shows the scripted answer.
func TestAgent_ScriptedModelAnswersEachAgent(t *testing.T) {
	for _, spec := range []agentSpec{claudeSpec, codexSpec, geminiSpec} {
		t.Run(spec.agent, func(t *testing.T) {
			af := newAgentFleet(t, spec, modelapi.AgentOptions{Trusted: true})
			af.api.Script(modelapi.Turn{Text: "Scripted answer forty-two.", Chunks: 3})
			af.screenHas("its prompt", spec.prompt)
			af.ask("Say the scripted answer")
			r := af.mainRequest(0)
			if !strings.Contains(string(r.Body), "Say the scripted answer") {
				t.Errorf("the main request does not carry the prompt: %.500s", r.Body)
			}
			af.screenHas("the scripted answer", "forty-two")
		})
	}
}

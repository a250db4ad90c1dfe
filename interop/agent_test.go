//go:build interop

package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/agent/modelapi"
	"github.com/harness-dev/harness/internal/api"
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
	return newAgentFleetEnv(t, spec, o, nil, t.TempDir(), "")
}

// newAgentFleetEnv is newAgentFleet with extra variables in the agent's
// environment, the fleet's files under dir, and an env_file unless "".
func newAgentFleetEnv(t *testing.T, spec agentSpec, o modelapi.AgentOptions, extra map[string]string, dir, envFile string, tomlLines ...string) *agentFleet {
	t.Helper()
	srv, err := modelapi.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	af := &agentFleet{api: srv}
	af.tuiFleet = newTUIFleetEnvAt(t, dir, spec.bin, spec.pkg, "work-"+spec.bin, tuiBin(t, spec.bin), func(home, work string) string {
		af.work = work
		env, err := srv.AgentEnv(spec.agent, home, work, o)
		if err != nil {
			t.Fatal(err)
		}
		maps.Copy(env, extra)
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(env)) {
			kv = append(kv, fmt.Sprintf("%s = %q", k, env[k]))
		}
		table := "{ " + strings.Join(kv, ", ") + " }"
		if envFile != "" {
			table += fmt.Sprintf("\nenv_file = %q", envFile)
		}
		for _, l := range tomlLines {
			// {API} is the model server's host:port (a sandbox's allow list).
			table += "\n" + strings.ReplaceAll(l, "{API}", strings.TrimPrefix(srv.URL, "http://"))
		}
		return table
	}, spec.args...)
	return af
}

// screenHas waits until the screen shows every phrase.
func (af *agentFleet) screenHas(what string, phrases ...string) tuiScreen {
	af.T.Helper()
	has := func(s tuiScreen) bool { return missingPhrase(s, phrases) < 0 }
	if s := af.screen(); has(s) {
		return s // settle waits for the next output, which may never come
	}
	return af.settle(what, has)
}

// missingPhrase is the index of the first of phrases the screen does not
// show, -1 when it shows them all.
func missingPhrase(s tuiScreen, phrases []string) int {
	text := strings.Join(s.Lines, "\n")
	return slices.IndexFunc(phrases, func(p string) bool { return !strings.Contains(text, p) })
}

// screenShows waits until the screen shows every phrase, looking again at
// each event of the fleet and at least every 250 ms: a check that the
// phrases are there. screenHas waits for 3 s of quiet first (settle), for
// a caller that reads more of the screen than its phrases; in the story
// that wait was most of the time between a screen drawn and the next step.
func (af *agentFleet) screenShows(what string, phrases ...string) {
	af.T.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		s := af.screen()
		missing := missingPhrase(s, phrases)
		if missing < 0 {
			return
		}
		if time.Now().After(deadline) {
			af.T.Fatalf("%s did not show %s (%q) within 2 minutes: %s", af.name, what, phrases[missing], s)
		}
		select {
		case _, open := <-af.events:
			if !open {
				af.events = nil // ended: the ticker alone
			}
		case <-tick.C:
		}
	}
}

// ask types a prompt into the agent with `harness send --enter`, once,
// and waits until the model server gets a request carrying it: every
// agent sends one for a submitted prompt, and harness writes the Enter as
// the agent needs it (Gemini CLI takes one right after a paste for a
// newline), so there is nothing to press again.
func (af *agentFleet) ask(prompt string) {
	af.T.Helper()
	before := len(af.api.Requests())
	if out, errOut, code := af.Run("send", af.name, prompt, "--enter"); code != 0 {
		af.T.Fatalf("send --enter: exit %d: %s%s", code, out, errOut)
	}
	af.promptRequest(before, prompt)
}

// promptRequest waits until a request after the first `before` carries
// prompt, failing with the screen after two minutes.
func (af *agentFleet) promptRequest(before int, prompt string) modelapi.Request {
	af.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	want, _ := json.Marshal(prompt)
	r, _, err := af.api.WaitRequest(ctx, before, func(r modelapi.Request) bool {
		return strings.Contains(string(r.Body), strings.Trim(string(want), `"`))
	})
	if err != nil {
		// The send as the daemon logged it: the input, its waits for the
		// agent to take the paste that reached their bounds, an Enter
		// written again.
		var waits []string
		for _, l := range strings.Split(af.Log(), "\n") {
			if strings.Contains(l, "after a paste") || strings.Contains(l, "input sent") || strings.Contains(l, "Enter") || strings.Contains(l, "agent state") {
				waits = append(waits, l)
			}
		}
		af.T.Fatalf("the prompt %q never reached the model: %v\nscreen %s\n%s", prompt, err, af.screen(), strings.Join(waits, "\n"))
	}
	return r
}

// mainRequest waits for the agent's n-th (0-based) main request to the
// model server.
func (af *agentFleet) mainRequest(n int) modelapi.Request {
	af.T.Helper()
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
		af.T.Fatalf("no main request %d from %s: %v; requests:\n%s\nscreen %s", n, af.name, err, strings.Join(seen, "\n"), af.lastScreen())
	}
	return r
}

// TestAgent_ScriptedModelAnswersEachAgent: each agent, trusted, reaches
// its prompt, sends a prompt to the scripted server in its own wire format
// and shows the scripted answer.
func TestAgent_ScriptedModelAnswersEachAgent(t *testing.T) {
	for _, spec := range []agentSpec{claudeSpec, codexSpec, geminiSpec} {
		t.Run(spec.agent, func(t *testing.T) {
			t.Parallel() // each agent has its own daemon, model server, HOME and workdir
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

// agentWait is `harness wait NAME --state S[,S] --json`.
type agentWait struct {
	Name       string     `json:"name"`
	TimedOut   bool       `json:"timed_out"`
	Agent      string     `json:"agent"`
	AgentState string     `json:"agent_state"`
	WaitingFor string     `json:"waiting_for"`
	Prompt     string     `json:"prompt"`
	Choices    []string   `json:"choices"`
	Suggested  string     `json:"suggested"`
	Until      *time.Time `json:"until"`
	Message    string     `json:"agent_message"`
}

// waitState waits (harness wait --state) until the agent is in one of
// states, failing with the screen after two minutes.
func (af *agentFleet) waitState(states ...string) agentWait {
	af.T.Helper()
	out, errOut, code := af.Run("wait", af.name, "--state", strings.Join(states, ","), "--timeout", "2m", "--json")
	var w agentWait
	if err := json.Unmarshal([]byte(out), &w); err != nil || code != 0 {
		af.T.Fatalf("wait --state %v: exit %d (%v): %s%s\nscreen %s", states, code, err, out, errOut, af.lastScreen())
	}
	return w
}

// waitAgent waits on the event subscription (kind agent) until the
// agent's state satisfies ok, starting from its list row.
func (af *agentFleet) waitAgent(what string, ok func(agentWait) bool) agentWait {
	af.T.Helper()
	if r := af.row(); ok(r) {
		return r
	}
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case ev, open := <-af.events:
			if !open {
				af.T.Fatalf("the event subscription ended waiting for %s", what)
			}
			if ev.Kind != api.EventAgent || ev.Unit != af.name || ev.Agent == nil {
				continue
			}
			a := ev.Agent
			w := agentWait{Name: af.name, Agent: a.Agent, AgentState: string(a.AgentState), WaitingFor: string(a.WaitingFor),
				Prompt: a.Prompt, Choices: a.Choices, Suggested: a.Suggested, Until: a.Until, Message: a.AgentMessage}
			if ok(w) {
				return w
			}
		case <-deadline:
			af.T.Fatalf("%s: no %s within 2 minutes; row %+v\nscreen %s", af.name, what, af.row(), af.lastScreen())
		}
	}
}

// row is the agent's list --json row.
func (af *agentFleet) row() agentWait {
	af.T.Helper()
	var rows []agentWait
	af.MustJSON(&rows, "list")
	for _, r := range rows {
		if r.Name == af.name {
			return r
		}
	}
	af.T.Fatalf("no list row for %s", af.name)
	return agentWait{}
}

// TestAgent_StatesOfRealAgents drives each agent CLI through its states
// against the scripted model, each seen through `harness wait --state`
// and `harness list --json` (docs/design/agents.md): its first-run dialogs as
// waiting(trust / choice), ready at its prompt, working while the model
// streams slowly, waiting(permission) with the command and the choices
// when the model asks to run a shell command, ready again once `harness
// answer` approved it and the command ran (the file appears), limited with the reset time the agent
// shows after a scripted usage-limit answer.
func TestAgent_StatesOfRealAgents(t *testing.T) {
	for _, spec := range []agentSpec{claudeSpec, geminiSpec, codexSpec} {
		t.Run(spec.agent, func(t *testing.T) {
			t.Parallel() // each agent has its own daemon, model server, HOME and workdir
			af := newAgentFleet(t, spec, modelapi.AgentOptions{Trusted: spec.agent == "codex"})
			switch spec.agent {
			case "claude-code":
				w := af.waitState("waiting")
				if w.WaitingFor != "trust" || !slices.Contains(w.Choices, "Yes, I trust this folder") || w.Prompt == "" {
					t.Fatalf("first dialog: %+v", w)
				}
				af.answer(w, "Yes, I trust this folder", "Down")
				w = af.waitAgent("the API key dialog", func(w agentWait) bool { return w.WaitingFor == "choice" })
				if w.WaitingFor != "choice" || !slices.Equal(w.Choices, []string{"Yes", "No (recommended)"}) || !strings.Contains(w.Prompt, "API key") {
					t.Fatalf("second dialog: %+v", w)
				}
				af.answer(w, "Yes", "Up")
			case "gemini":
				w := af.waitState("waiting")
				if w.WaitingFor != "trust" || len(w.Choices) != 3 || !strings.HasPrefix(w.Choices[0], "Trust folder") {
					t.Fatalf("first dialog: %+v", w)
				}
				af.answer(w, w.Choices[0])
			}
			if w := af.waitState("ready"); w.Agent != spec.agent {
				t.Fatalf("ready: %+v", w)
			}

			af.api.Script(modelapi.Turn{Text: strings.Repeat("slowly streamed words ", 12), Chunks: 12, Delay: 700 * time.Millisecond})
			af.ask("Answer slowly")
			af.mainRequest(0)
			af.waitState("working")
			af.waitState("ready")

			af.api.Script(modelapi.Turn{Shell: "touch made-by-agent"}, modelapi.Turn{Text: "Made the file."})
			af.ask("Make the file")
			w := af.waitState("waiting")
			if w.WaitingFor != "permission" || !strings.Contains(w.Prompt, "touch made-by-agent") || len(w.Choices) < 2 {
				t.Fatalf("permission: %+v\nscreen %s", w, af.lastScreen())
			}
			if r := af.row(); r.AgentState != "waiting" || r.Prompt != w.Prompt || !slices.Equal(r.Choices, w.Choices) {
				t.Errorf("list row %+v, want the waiting state %+v", r, w)
			}
			af.answer(w, w.Choices[0])
			af.mainRequest(2)
			af.waitState("ready")
			if _, err := os.Stat(filepath.Join(af.work, "made-by-agent")); err != nil {
				t.Errorf("the approved command did not run: %v", err)
			}

			reset := time.Now().Add(3 * time.Hour).Truncate(time.Minute)
			af.api.Script(modelapi.Turn{Error: &modelapi.Error{Status: 429, UsageLimit: true, ResetAt: reset}})
			af.ask("Go on")
			w = af.waitState("limited")
			t.Logf("limited: %+v", w)
			switch spec.agent {
			case "gemini":
				// Gemini CLI says the limit is reached but not until when.
			default:
				if w.Until == nil || w.Until.Sub(reset).Abs() > time.Minute {
					t.Errorf("limited until %v, want %v (the reset the agent shows): %+v", w.Until, reset, w)
				}
			}
		})
	}
}

// answerResult is `harness answer NAME CHOICE --json`.
type answerResult struct {
	Name   string    `json:"name"`
	Choice string    `json:"choice"`
	Number int       `json:"number"`
	Prompt string    `json:"prompt"`
	Keys   []string  `json:"keys"`
	After  agentWait `json:"after"`
}

// answer picks choice of the dialog w with `harness answer` (docs/design/agents.md),
// which presses the keys the adapter knows for it, and checks the answer
// names the choice and the keys a person would press.
func (af *agentFleet) answer(w agentWait, choice string, keys ...string) answerResult {
	af.T.Helper()
	out, errOut, code := af.Run("answer", af.name, choice, "--json")
	var res answerResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
		af.T.Fatalf("answer %q to %+v: exit %d (%v): %s%s\nscreen %s", choice, w, code, err, out, errOut, af.lastScreen())
	}
	want := append(keys, "Enter")
	if res.Choice != choice || res.Prompt != w.Prompt || !slices.Equal(res.Keys, want) {
		af.T.Errorf("answer %q: %+v, want keys %v for the prompt %q", choice, res, want, w.Prompt)
	}
	return res
}

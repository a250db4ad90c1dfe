package agent

import (
	"errors"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

func TestScenario_TheCommandNamesTheAgent(t *testing.T) {
	for cmd, want := range map[string]string{
		"claude":                           ClaudeCode,
		"/usr/local/bin/claude":            ClaudeCode,
		"node_modules/.bin/codex":          Codex,
		"gemini":                           Gemini,
		"pi":                               Pi,
		"/usr/bin/cline":                   Cline,
		"/opt/gemini-cli/bundle/gemini.js": Gemini,
		"npx":                              Generic,
		"sh":                               Generic,
		"claude-wrapper":                   Generic,
		"":                                 Generic,
	} {
		if got := Infer(cmd); got != want {
			t.Errorf("Infer(%q) = %q, want %q", cmd, got, want)
		}
	}
	if got, want := Names(), []string{ClaudeCode, Cline, Codex, Copilot, Demo, Gemini, Generic, OpenCode, Pi, QwenCode}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	if _, ok := Lookup("cursor"); ok {
		t.Error(`Lookup("cursor") found an adapter`)
	}
	if MustLookup("cursor").Name != Generic {
		t.Error("MustLookup of an unknown name is not the generic adapter")
	}
}

func TestScenario_GenericIsBusyIdleOnly(t *testing.T) {
	g := MustLookup(Generic)
	now := time.Now()
	for _, c := range []struct {
		s    Screen
		want api.AgentState
	}{
		{Screen{}, api.AgentReady},
		{Screen{Busy: true}, api.AgentWorking},
		{Screen{Shown: true, Lines: []string{"Do you want to proceed?", "❯ 1. Yes"}}, api.AgentReady},
		{Screen{Shown: true, Busy: true}, api.AgentWorking},
	} {
		st := g.Classify(c.s, now)
		if st.AgentState != c.want || st.Agent != Generic || st.WaitingFor != "" || st.Choices != nil {
			t.Errorf("Classify(%+v) = %+v, want state %s only", c.s, st, c.want)
		}
	}
	if _, err := g.Args(RunOptions{}); err != nil {
		t.Errorf("Args of zero options: %v", err)
	}
	if _, err := g.Args(RunOptions{Model: "m"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Args(model) on generic = %v, want ErrUnsupported", err)
	}
}

func TestScenario_ARuleReadsPromptAndChoices(t *testing.T) {
	a := &Adapter{Name: "test", Rules: []Rule{{
		Name: "permission", State: api.AgentWaiting, WaitingFor: api.WaitingPermission,
		When:   []*regexp.Regexp{re(`Do you want to proceed\?`)},
		Prompt: re(`Bash command`), PromptNext: true,
		Choice: re(`^\s*[│ ]*(?:❯\s*)?\d+\.\s+(.*?)\s*│?$`),
	}}}
	lines := []string{
		"╭──────────────╮",
		"│ Bash command │",
		"│              │",
		"│   touch made-by-agent │",
		"│ Do you want to proceed? │",
		"│ ❯ 1. Yes │",
		"│   2. No  │",
		"╰──────────────╯",
	}
	st := a.Classify(Screen{Shown: true, Lines: lines}, time.Now())
	if st.AgentState != api.AgentWaiting || st.WaitingFor != api.WaitingPermission {
		t.Fatalf("state = %+v", st)
	}
	if st.Prompt != "touch made-by-agent" {
		t.Errorf("prompt = %q", st.Prompt)
	}
	if !slices.Equal(st.Choices, []string{"Yes", "No"}) {
		t.Errorf("choices = %q", st.Choices)
	}
	if st := a.Classify(Screen{Lines: lines}, time.Now()); st.AgentState != api.AgentStarting {
		t.Errorf("before the first screen: %+v, want starting", st)
	}
	if st := a.Classify(Screen{Shown: true, Busy: true, Lines: []string{"thinking"}}, time.Now()); st.AgentState != api.AgentWorking {
		t.Errorf("no rule, busy: %+v, want working", st)
	}
}

// TestScenario_EveryAdapterBuildsAndClaimsItsOwnCommands: adapters are
// built at their first lookup (Register); each builds under its own name
// and no command is claimed twice, which Register checked at start before.
func TestScenario_EveryAdapterBuildsAndClaimsItsOwnCommands(t *testing.T) {
	claimed := map[string]string{}
	for _, name := range Names() {
		a, ok := Lookup(name)
		if !ok || a.Name != name {
			t.Fatalf("Lookup(%q) = %+v, %v", name, a, ok)
		}
		for _, c := range a.Commands {
			if other, dup := claimed[c]; dup {
				t.Errorf("%s and %s both claim command %q", other, name, c)
			}
			claimed[c] = name
		}
	}
	if Infer("/usr/local/bin/gemini") != Gemini || Infer("claude") != ClaudeCode || Infer("sh") != Generic {
		t.Error("Infer does not find the adapters' commands")
	}
}

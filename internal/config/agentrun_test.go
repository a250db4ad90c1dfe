package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/agent"
)

func TestAgentRunKeysParse(t *testing.T) {
	cfg, err := Parse("/d/harness.toml", []byte(`
[harness.nightly]
cmd = "claude"
schedule = "@daily"
prompt_file = "review.md"
model = "claude-sonnet"
approval = "auto"
max_turns = 12
resume = true
on_limit = "stop"
loop_guard = 5

[harness.pair]
cmd = "gemini"
prompt = "hello"
`))
	if err != nil {
		t.Fatal(err)
	}
	n := cfg.Harnesses["nightly"].AgentRun
	want := AgentRun{PromptFile: "review.md", Model: "claude-sonnet", Approval: agent.ApprovalAuto, MaxTurns: 12,
		Resume: true, OnLimit: OnLimitStop, LoopGuard: 5}
	if n != want || !n.HasPrompt() {
		t.Fatalf("nightly: %+v", n)
	}
	if p := cfg.Harnesses["pair"].AgentRun; p.Prompt != "hello" || p.OnLimit != OnLimitPark {
		t.Fatalf("pair: %+v", p)
	}
	if len(cfg.Warnings) != 0 {
		t.Fatalf("warnings %q", cfg.Warnings)
	}
}

func TestAgentRunBadInputNamesFileAndLine(t *testing.T) {
	for _, tt := range []struct{ name, src, want string }{
		{"bad approval", "[harness.a]\ncmd='claude'\napproval = 'yolo'\n",
			`harness.toml:3: harness.a.approval: invalid approval "yolo" (want "ask" or "auto")`},
		{"bad on_limit", "[harness.a]\ncmd='claude'\non_limit = 'wait'\n",
			`harness.toml:3: harness.a.on_limit: invalid on_limit "wait" (want "park", "stop" or "ignore")`},
		{"max_turns codex", "[harness.a]\ncmd='codex'\nmax_turns = 3\n",
			`harness.toml:3: harness.a.max_turns: agent codex has no flag for it`},
		{"both prompts", "[harness.a]\ncmd='claude'\nprompt = 'x'\nprompt_file = 'p.md'\n",
			`harness.toml:4: harness.a.prompt_file: cannot be combined with prompt`},
		{"negative max_turns", "[harness.a]\ncmd='claude'\nmax_turns = -1\n",
			`harness.toml:3: harness.a.max_turns: -1 is out of range (want 1..100000)`},
		{"loop_guard of one", "[harness.a]\ncmd='claude'\nloop_guard = 1\n",
			`harness.toml:3: harness.a.loop_guard: 1 is out of range (want 2..10000)`},
		{"empty prompt", "[harness.a]\ncmd='claude'\nprompt = ' '\n",
			`harness.toml:3: harness.a.prompt: is empty`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("/d/harness.toml", []byte(tt.src))
			if err == nil {
				t.Fatal("no error")
			}
			if got := strings.Split(err.Error(), "\n"); !slices.Contains(got, tt.want) {
				t.Fatalf("errors %q lack %q", got, tt.want)
			}
		})
	}
	// resume on a generic harness loads, with a warning at its line.
	cfg, err := Parse("/d/harness.toml", []byte("[harness.g]\ncmd='sh'\n\nresume = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `harness.toml:4: harness.g.resume: has no effect: "sh" is a generic harness (set agent = "claude-code", "codex" or "gemini")`; !slices.Contains(cfg.Warnings, want) {
		t.Fatalf("warnings %q lack %q", cfg.Warnings, want)
	}
}

package config

import (
	"slices"
	"strings"
	"testing"
)

func TestScenario_AWorktreesSetupTeardownPortsAndPRCommandAreRead(t *testing.T) {
	cfg, err := Parse("h.toml", []byte(`
[harness.a]
cmd = "x"
worktree = { repo = "/r" }
setup = ["npm", "ci"]
teardown = ["make", "clean"]
ports = 3
pr_command = ["gh", "pr", "create", "--head", "{branch}"]

[harness.b]
cmd = "x"
ports = 1
`))
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Harnesses["a"].Bootstrap
	if !slices.Equal(b.Setup, []string{"npm", "ci"}) || !slices.Equal(b.Teardown, []string{"make", "clean"}) || b.Ports != 3 ||
		!slices.Equal(b.PRCommand, []string{"gh", "pr", "create", "--head", "{branch}"}) {
		t.Fatalf("a: %+v", b)
	}
	if cfg.Harnesses["b"].Bootstrap.Ports != 1 {
		t.Fatal("ports without a worktree is not read")
	}
}

func TestScenario_BadBootstrapKeysAreConfigErrorsNamingTheKey(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"worktree = { repo = \"/r\" }\nsetup = \"npm ci\"", "setup: must be an array of strings"},
		{"worktree = { repo = \"/r\" }\nsetup = []", "setup: must name a program"},
		{"worktree = { repo = \"/r\" }\nteardown = [\"\"]", "teardown: must name a program"},
		{"ports = 65", "ports"},
		{"ports = -1", "ports"},
		{"setup = [\"make\"]", "setup: needs worktree"},
		{"pr_command = [\"gh\"]", "pr_command: needs worktree"},
	} {
		_, err := Parse("h.toml", []byte("[harness.a]\ncmd = \"x\"\n"+tc.body+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.body, err, tc.want)
		}
	}
}

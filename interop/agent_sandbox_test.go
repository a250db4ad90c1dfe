//go:build interop

package interop

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/agent/modelapi"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/sandbox"
	"github.com/harness-dev/harness/internal/testenv"
)

// Claude Code and Codex each finish a turn with an approved
// shell tool call inside fs = "workdir", network = "allow" (the model
// server on the host's loopback reached through the egress proxy): the
// command's write in the workdir lands, its write outside fails, and
// describe shows the levels reached (docs/sandbox.md). Gemini CLI 0.61.0
// is not here yet: sandboxed (fs alone, or network alone) it draws its
// prompt but never submits a sent one, which it does unconfined.
func TestAgent_RealAgentsFinishATurnInsideTheSandbox(t *testing.T) {
	if abi, _ := sandbox.ABI(); abi < 1 {
		testenv.Missing(t, "Landlock", "the sandbox confines files with it")
	}
	if err := exec.Command("unshare", "-Urn", "true").Run(); err != nil {
		testenv.Missing(t, "unprivileged user and network namespaces", err.Error())
	}
	for _, spec := range []agentSpec{claudeSpec, codexSpec} {
		t.Run(spec.agent, func(t *testing.T) {
			t.Parallel()
			outside := t.TempDir()
			af := newAgentFleetEnv(t, spec, modelapi.AgentOptions{Trusted: spec.agent == "codex"}, nil, t.TempDir(), "",
				`sandbox = { fs = "workdir", network = "allow", allow = ["{API}"] }`)
			switch spec.agent {
			case "claude-code":
				w := af.waitState("waiting")
				af.answer(w, "Yes, I trust this folder", "Down")
				w = af.waitAgent("the API key dialog", func(w agentWait) bool { return w.WaitingFor == "choice" })
				af.answer(w, "Yes", "Up")
			case "gemini":
				w := af.waitState("waiting")
				af.answer(w, w.Choices[0])
			}
			af.waitState("ready")
			var d api.Description
			af.MustJSON(&d, "describe", af.name)
			if d.Sandbox == nil || !strings.HasPrefix(d.Sandbox.FS, "landlock-v") || d.Sandbox.Network != "netns+proxy" {
				t.Fatalf("describe's sandbox: %+v", d.Sandbox)
			}

			escape := filepath.Join(outside, "escaped-by-agent")
			af.api.Script(modelapi.Turn{Shell: "touch made-by-agent; touch " + escape}, modelapi.Turn{Text: "Done."})
			af.ask("Make the files")
			w := af.waitState("waiting")
			if w.WaitingFor != "permission" || len(w.Choices) < 2 {
				t.Fatalf("permission: %+v\nscreen %s", w, af.lastScreen())
			}
			af.answer(w, w.Choices[0])
			af.mainRequest(1) // the prompt's, then the tool result's
			af.waitState("ready")
			if _, err := os.Stat(filepath.Join(af.work, "made-by-agent")); err != nil {
				t.Errorf("the approved command's write in the workdir: %v\nscreen %s", err, af.lastScreen())
			}
			if _, err := os.Stat(escape); err == nil {
				t.Errorf("the approved command wrote outside the workdir")
			}
			if reqs := af.api.Requests(); !slices.ContainsFunc(reqs, func(r modelapi.Request) bool { return strings.Contains(string(r.Body), "touch made-by-agent") }) {
				t.Errorf("no request carried the tool call's result")
			}
		})
	}
}

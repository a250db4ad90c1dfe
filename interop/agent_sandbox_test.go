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

// needAgentSandbox skips (fails under HARNESS_CI) where the kernel lacks
// what fs = "workdir", network = "allow" needs.
func needAgentSandbox(t *testing.T) {
	t.Helper()
	if abi, _ := sandbox.ABI(); abi < 1 {
		testenv.Missing(t, "Landlock", "the sandbox confines files with it")
	}
	if err := exec.Command("unshare", "-Urn", "true").Run(); err != nil {
		testenv.Missing(t, "unprivileged user and network namespaces", err.Error())
	}
}

// Claude Code, Codex and Gemini CLI each finish a turn with an approved
// shell tool call inside fs = "workdir", network = "allow" (the model
// server on the host's loopback reached through the egress proxy): the
// command's write in the workdir lands, its write outside fails, and
// describe shows the levels reached, a private /tmp among them
// (docs/sandbox.md).
func TestAgent_RealAgentsFinishATurnInsideTheSandbox(t *testing.T) {
	needAgentSandbox(t)
	for _, spec := range []agentSpec{claudeSpec, codexSpec, geminiSpec} {
		t.Run(spec.agent, func(t *testing.T) {
			t.Parallel()
			dir := testenv.DirOutsideTmp(t, "hi-")
			// Beside the workdir, not below /tmp: Landlock, not the
			// private /tmp, must be what stops the write.
			outside := filepath.Join(dir, "outside")
			if err := os.Mkdir(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			// Gemini CLI trusted beforehand: where it reads harness's
			// wiring (a root-only path, as here), a prompt sent right
			// after its trust dialog was answered never reached the
			// model, unconfined as well as sandboxed.
			af := newAgentFleetEnv(t, spec, modelapi.AgentOptions{Trusted: spec.agent != "claude-code"}, nil, dir, "",
				`sandbox = { fs = "workdir", network = "allow", allow = ["{API}"] }`)
			switch spec.agent {
			case "claude-code":
				w := af.waitState("waiting")
				af.answer(w, "Yes, I trust this folder", "Down")
				w = af.waitAgent("the API key dialog", func(w agentWait) bool { return w.WaitingFor == "choice" })
				af.answer(w, "Yes", "Up")
			}
			af.waitState("ready")
			var d api.Description
			af.MustJSON(&d, "describe", af.name)
			if d.Sandbox == nil || !strings.HasPrefix(d.Sandbox.FS, "landlock-v") || d.Sandbox.Network != "netns+proxy" ||
				d.Sandbox.Tmp != sandbox.TmpLevelMount {
				t.Fatalf("describe's sandbox: %+v", d.Sandbox)
			}

			escape := filepath.Join(outside, "escaped-by-agent")
			af.api.Script(modelapi.Turn{Shell: "touch made-by-agent; touch " + escape}, modelapi.Turn{Text: "Done."})
			af.ask("Make the files")
			// Wired, Gemini CLI's hook tells the permission before its
			// screen shows the choices.
			w := af.waitAgent("the permission with its choices", func(w agentWait) bool {
				return w.WaitingFor == "permission" && len(w.Choices) >= 2
			})
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

// TestAgent_ASandboxedResumedAgentRemembers: with resume = true inside fs
// = "workdir", network = "allow", after `harness restart` the agent's next request carries
// the earlier turn: its session files, in its own state directories, were
// written inside the sandbox and read back by the next run.
func TestAgent_ASandboxedResumedAgentRemembers(t *testing.T) {
	needAgentSandbox(t)
	for _, spec := range []agentSpec{claudeSpec, codexSpec, geminiSpec} {
		t.Run(spec.agent, func(t *testing.T) {
			t.Parallel() // each agent has its own daemon, model server, HOME and workdir
			// Listed: Codex's provider is in its config.toml, which the
			// agent's API from its environment does not see.
			rf := newRunFleet(t, spec, "resume = true\nmcp_wire = false\n"+`sandbox = { fs = "workdir", network = "allow", allow = ["{API}"] }`)
			rf.api.Script(modelapi.Turn{Text: "Noted the word."}, modelapi.Turn{Text: "It was papaya."})
			if out, errOut, code := rf.Run("start", "a"); code != 0 {
				t.Fatalf("start: %s%s", out, errOut)
			}
			af := rf.agent()
			rf.askAndSee(af, "Remember the word PAPAYA-7731.")
			af.screenHas("the answer", "Noted the word")
			var d api.Description
			rf.MustJSON(&d, "describe", "a")
			if d.Sandbox == nil || !strings.HasPrefix(d.Sandbox.FS, "landlock-v") || d.Sandbox.Network != "netns+proxy" {
				t.Fatalf("describe's sandbox: %+v", d.Sandbox)
			}
			if out, errOut, code := rf.Run("restart", "a"); code != 0 {
				t.Fatalf("restart: %s%s", out, errOut)
			}
			if r := rf.askAndSee(af, "Tell me the word I gave you."); !strings.Contains(string(r.Body), "PAPAYA-7731") {
				t.Errorf("after restart the sandboxed agent's request lacks the earlier turn: %.400s", r.Body)
			}
			af.screenHas("the second answer", "It was papaya")
		})
	}
}

package interop

import (
	"os"
	"os/exec"
	"testing"

	"github.com/harness-dev/harness/internal/agent/modelapi"
)

func TestAgent_DumpTranscripts(t *testing.T) {
	for _, spec := range []agentSpec{claudeSpec, codexSpec, geminiSpec} {
		t.Run(spec.agent, func(t *testing.T) {
			af := newAgentFleetEnv(t, spec, modelapi.AgentOptions{Trusted: true}, nil, t.TempDir())
			af.api.Script(modelapi.Turn{Text: "First answer.", Usage: modelapi.Usage{Input: 111, Output: 22, CacheRead: 33, CacheWrite: 44}},
				modelapi.Turn{Shell: "touch made-by-agent"}, modelapi.Turn{Text: "Made it."})
			af.screenHas("its prompt", spec.prompt)
			af.ask("Say something")
			af.mainRequest(0)
			af.waitState("ready")
			af.ask("Make the file")
			af.mainRequestApproving(2)
			af.waitState("ready")
			out := "/tmp/i27b-samples/" + spec.agent
			os.RemoveAll(out)
			exec.Command("cp", "-r", af.home, out).Run()
		})
	}
}

package agent

import (
	"fmt"

	"github.com/harness-dev/harness/internal/api"
)

// Demo is the scripted agent built into the harness binary (`harness
// demo-agent`, internal/demoagent) that `harness demo` runs: it needs no
// model, network or installed CLI. It draws its whole screen anew each
// time: a prompt box while ready, a spinner while it works, and a dialog
// with numbered choices and a ❯ cursor before it edits a file.
const Demo = "demo"

func init() {
	Register(Demo, func() *Adapter {
		return &Adapter{
			Name: Demo,
			// No Commands: its cmd is the harness binary itself, so a
			// harness names it with agent = "demo".
			Rules: []Rule{
				{
					Name: "permission", State: api.AgentWaiting, WaitingFor: api.WaitingPermission,
					After:  re(`^\s*Allow edit to \S.*\?\s*$`),
					When:   res(`^\s*(?:❯\s*)?1\.\s+Yes\s*$`),
					Prompt: re(`^\s*(Allow edit to \S.*\?)\s*$`),
					Choice: re(`^\s*(?:❯\s*)?\d+\.\s+(.+)$`),
					// Yes lets it edit and go on: the page marks it,
					// as for the real agents' dialogs.
					Proceed: re(`^Yes$`),
				},
				{Name: "working", State: api.AgentWorking, When: res(`esc to interrupt\)\s*$`)},
				{Name: "prompt", State: api.AgentReady, When: res(`^│ >`, `^\s*Enter to send · Ctrl-C to quit\s*$`)},
			},
			Argv: demoArgv,
		}
	})
}

// demoArgv: the demo agent takes no flags. An interactive prompt is typed
// once it is ready, never an argument, so it is the one option it has.
func demoArgv(o RunOptions) ([]string, error) {
	if o.Job || o.Model != "" || o.Approval != "" || o.MaxTurns > 0 || o.ResumeSession != "" || o.Continue {
		return nil, fmt.Errorf("agent %s: only an interactive prompt: %w", Demo, ErrUnsupported)
	}
	return nil, nil
}

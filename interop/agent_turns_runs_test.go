//go:build interop

package interop

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/agent/modelapi"
	"github.com/harness-dev/harness/internal/api"
)

// TestAgent_EachRunShowsItsOwnTurns: with hooks off (no hook names a
// session or a transcript), two runs of one harness of each real agent
// leave two transcripts in the agent's folder for the workdir; `harness
// turns NAME RUN --json` shows each run's own conversation: the first
// run's although the second run's file is newer, and the second's while
// it runs.
func TestAgent_EachRunShowsItsOwnTurns(t *testing.T) {
	for _, spec := range []agentSpec{claudeSpec, codexSpec, geminiSpec} {
		t.Run(spec.agent, func(t *testing.T) {
			t.Parallel() // each agent has its own daemon, model server, HOME and workdir
			af := newAgentFleetEnv(t, spec, modelapi.AgentOptions{Trusted: true}, nil, t.TempDir(), "", "hooks = false")
			af.api.Script(modelapi.Turn{Text: "Answer of the first run."}, modelapi.Turn{Text: "Answer of the second run."})

			af.screenHas("its prompt", spec.prompt)
			af.ask("Prompt of the first run")
			af.mainRequest(0)
			af.screenHas("the first answer", "Answer of the first run.")
			af.waitState("ready")
			run1 := af.screen().RunID

			if out, errOut, code := af.Run("restart", af.name); code != 0 {
				t.Fatalf("restart: exit %d: %s%s", code, out, errOut)
			}
			second := func(s tuiScreen) bool {
				return s.RunID != run1 && strings.Contains(strings.Join(s.Lines, "\n"), spec.prompt)
			}
			if !second(af.screen()) {
				af.settle("the second run's prompt", second)
			}
			run2 := af.screen().RunID
			af.waitState("ready")
			af.ask("Prompt of the second run")
			af.mainRequest(1)
			af.screenHas("the second answer", "Answer of the second run.")

			own := map[uint64][2]string{
				run1: {"Prompt of the first run", "Answer of the first run."},
				run2: {"Prompt of the second run", "Answer of the second run."},
			}
			// The second run first: once its turns show, its file is
			// there, and newer than the first run's.
			for _, run := range []uint64{run2, run1} {
				other := own[run1]
				if run == run1 {
					other = own[run2]
				}
				res := af.waitRunTurns(run, func(res api.TurnsResult) bool {
					text := turnsText(res)
					return strings.Contains(text, own[run][0]) && strings.Contains(text, own[run][1])
				})
				if text := turnsText(res); res.RunID != run || strings.Contains(text, other[0]) || strings.Contains(text, other[1]) {
					t.Errorf("turns of run %d (run %d) show another run's conversation:\n%s", run, res.RunID, text)
				}
			}
		})
	}
}

// turnsText is a turns answer's turns, one "role: text" a line.
func turnsText(res api.TurnsResult) string {
	var b strings.Builder
	for _, t := range res.Turns {
		b.WriteString(t.Role + ": " + t.Text + "\n")
	}
	return b.String()
}

// waitRunTurns polls `harness turns NAME RUN --json` until ok (30 s): an
// agent writes its transcript after it shows its answer.
func (af *agentFleet) waitRunTurns(run uint64, ok func(api.TurnsResult) bool) api.TurnsResult {
	af.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var last api.TurnsResult
	var lastErr string
	for ctx.Err() == nil {
		out, errOut, code := af.Run("turns", af.name, strconv.FormatUint(run, 10), "--json")
		if code == 0 {
			last = api.TurnsResult{}
			if err := json.Unmarshal([]byte(out), &last); err == nil && ok(last) {
				return last
			}
		}
		lastErr = errOut
		time.Sleep(200 * time.Millisecond)
	}
	af.T.Fatalf("turns of run %d never got there: %s\n%s", run, lastErr, turnsText(last))
	return last
}

package supervise

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/api"
)

// TestScenario_AJobRetryingAUsageLimitIsLimitedWhileItRuns: a Claude Code
// job whose requests are answered 429 writes an api_retry line before
// each retry (the real program's lines, testdata of package agent) and
// would go on for minutes, then end at its timeout with no hold. Read as
// they come, the lines make its agent limited while it still runs, once
// a minute of retries has passed, with a message that says so.
func TestScenario_AJobRetryingAUsageLimitIsLimitedWhileItRuns(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "agent", "testdata", "jobs", "claude-code-retrying.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	lines = lines[:len(lines)-1] // no result line: the job still runs
	cfg := helperCfg("job", "print", map[string]string{"HELPER_TEXT": strings.Join(lines, "|")})
	cfg.Agent = "claude-code"
	cfg.AgentRun = AgentRun{Prompt: "Hit the limit", Job: true}
	e := newEnv(t, cfg)
	e.start()
	var got *api.AgentView
	e.waitFor("limited", func() bool {
		for _, ev := range e.rec.all() {
			if ev.Kind == api.EventAgent && ev.Agent.AgentState == api.AgentLimited {
				got = ev.Agent
				return true
			}
		}
		return false
	})
	if !strings.Contains(got.AgentMessage, "429") || !strings.Contains(got.AgentMessage, "attempt 7 of 10") || got.Until != nil {
		t.Errorf("limited %+v", got)
	}
	if st := e.u.Status(); st.State != StateRunning {
		t.Errorf("the job is %s: it is for on_limit to end it", st.State)
	}
}

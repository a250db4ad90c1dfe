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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/agent/modelapi"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
)

// Agent runs (docs/design/agents.md) with the real agent CLIs from npm against the
// scripted model API: prompts, non-interactive jobs and their results,
// resumed sessions, usage limits.

// runFleet is a daemon whose one harness runs a real agent with keys of
// the test's choosing, in its own HOME and work directory.
type runFleet struct {
	*fleet
	t          *testing.T
	spec       agentSpec
	api        *modelapi.Server
	dir        string
	home, work string
	config     string
}

// newRunFleet writes a config for harness "a" running spec's agent with
// keys (TOML lines) and starts a daemon on it; nothing is started.
func newRunFleet(t *testing.T, spec agentSpec, keys string, daemonArgs ...string) *runFleet {
	t.Helper()
	srv, err := modelapi.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	rf := &runFleet{t: t, spec: spec, api: srv, dir: dir, home: filepath.Join(dir, "home"), work: filepath.Join(dir, "work")}
	for _, d := range []string{rf.home, rf.work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	env, err := srv.AgentEnv(spec.agent, rf.home, rf.work, modelapi.AgentOptions{Trusted: true})
	if err != nil {
		t.Fatal(err)
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		kv = append(kv, fmt.Sprintf("%s = %q", k, env[k]))
	}
	quoted := make([]string, len(spec.args))
	for i, a := range spec.args {
		quoted[i] = strconv.Quote(a)
	}
	rf.config = fmt.Sprintf(`
[harness.a]
cmd = %q
args = [%s]
workdir = %q
env = { %s }
stop_grace = 3
%s
`, tuiBin(t, spec.bin), strings.Join(quoted, ", "), rf.work, strings.Join(kv, ", "),
		strings.ReplaceAll(keys, "{API}", strings.TrimPrefix(srv.URL, "http://"))) // {API}: a sandbox's allow list
	rf.fleet = newFleetAt(t, dir, rf.config, daemonArgs...)
	t.Cleanup(rf.checkNothingLeft)
	return rf
}

// restartDaemon kills the daemon with SIGKILL and starts a new one on the
// same config and state.
func (rf *runFleet) restartDaemon() {
	rf.t.Helper()
	rf.fleet.Cmd.Process.Kill()
	<-rf.fleet.Exited
	rf.fleet = newFleetAt(rf.t, rf.dir, rf.config)
}

// checkNothingLeft: no process of the agent's HOME outlives the test.
func (rf *runFleet) checkNothingLeft() {
	tf := &tuiFleet{fleet: rf.fleet, name: rf.spec.bin, home: rf.home, pkg: rf.spec.pkg}
	tf.checkNothingLeft()
}

// lastRun is the newest run of harness a.
func (rf *runFleet) lastRun() api.Run {
	rf.t.Helper()
	var rs []api.Run
	rf.MustJSON(&rs, "runs", "a")
	if len(rs) == 0 {
		rf.t.Fatal("no runs of a")
	}
	return rs[len(rs)-1]
}

// trigger runs the job and waits for its end, returning the trigger's
// answer, or its error output when it has none.
func (rf *runFleet) trigger() (api.TriggerResult, string) {
	rf.t.Helper()
	var tr api.TriggerResult
	out, errOut, _ := rf.Run("trigger", "a", "--wait", "--timeout", "3m", "--json")
	if err := json.Unmarshal([]byte(out), &tr); err != nil && errOut == "" {
		rf.t.Fatalf("trigger: %v: %s\nlog:\n%s", err, out, rf.Log())
	}
	return tr, out + errOut
}

// TestAgent_AJobWithAPromptFileKeepsItsResult: a job with prompt_file runs
// each agent non-interactively (claude -p, codex exec, gemini -p, each with
// machine-readable output) against the model server; the run carries
// outcome ok, the result text, its session, tokens and (Claude Code) cost.
// A missing prompt_file fails the run with a message naming it. The file
// starts as markdown files often do, with front matter ("---"), which no
// agent may take for an option.
func TestAgent_AJobWithAPromptFileKeepsItsResult(t *testing.T) {
	for _, spec := range []agentSpec{claudeSpec, codexSpec, geminiSpec} {
		t.Run(spec.agent, func(t *testing.T) {
			t.Parallel() // each agent has its own daemon, model server, HOME and workdir
			keys := "restart = \"no\"\nprompt_file = \"task.md\"\nmodel = " + strconv.Quote(map[string]string{
				"claude-code": "claude-test-model", "codex": "gpt-5", "gemini": "gemini-test-model"}[spec.agent])
			spec.args = nil // a job is the adapter's print/exec mode, not the TUI's flags
			rf := newRunFleet(t, spec, keys)
			rf.api.Script(modelapi.Turn{Text: "Reviewed: two PRs need changes.", Usage: modelapi.Usage{Input: 120, Output: 30}})

			_, errOut := rf.trigger()
			if r := rf.lastRun(); r.Outcome != api.RunFailed || !strings.Contains(r.Note, "prompt_file") ||
				!strings.Contains(r.Note, "task.md") || !strings.Contains(errOut, "prompt_file") {
				t.Fatalf("without its prompt_file: %s\n%+v", errOut, r)
			}
			if err := os.WriteFile(filepath.Join(rf.work, "task.md"), []byte("---\ntitle: nightly review\n---\nReview the open PRs of the nightly branch.\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			tr, errOut := rf.trigger()
			r := rf.lastRun()
			if tr.Outcome != api.RunOK || r.Outcome != api.RunOK {
				t.Fatalf("trigger %+v %s\nrun %+v\nlog:\n%s", tr, errOut, r, rf.Log())
			}
			if r.Result != "Reviewed: two PRs need changes." || r.SessionID == "" || r.Tokens.Output < 30 || r.Tokens.Input < 120 {
				t.Errorf("run %+v", r)
			}
			if spec.agent == "claude-code" && (r.CostUSD <= 0 || r.Model != "claude-test-model") {
				t.Errorf("claude run cost %v model %q", r.CostUSD, r.Model)
			}
			var main *modelapi.Request
			for _, q := range rf.api.MainRequests() {
				main = &q
			}
			if main == nil || !strings.Contains(string(main.Body), "Review the open PRs of the nightly branch.") {
				t.Errorf("the model was not asked the prompt: %v", main != nil)
			}
			if m := main.JSON()["model"]; spec.agent != "gemini" && m != map[string]string{"claude-code": "claude-test-model", "codex": "gpt-5"}[spec.agent] {
				t.Errorf("model %v", m)
			}
			if spec.agent == "gemini" && !strings.Contains(main.Path, "gemini-test-model") {
				t.Errorf("gemini path %s", main.Path)
			}
		})
	}
}

// TestAgent_AJobThatNeverHearsBackTimesOut: with timeout = 5 and a model
// that never finishes its answer, the run ends timed_out and nothing of
// the agent is left running.
func TestAgent_AJobThatNeverHearsBackTimesOut(t *testing.T) {
	spec := claudeSpec
	spec.args = nil
	// Without the MCP wiring Claude Code reaches the model sooner: the
	// 5 s are for the answer that never comes, not for its start-up.
	rf := newRunFleet(t, spec, "restart = \"no\"\nprompt = \"Summarise the logs.\"\ntimeout = 5\nmcp_wire = false")
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	rf.api.Script(modelapi.Turn{Text: "Summarising the logs now", Chunks: 2, Hold: never})
	start := time.Now()
	tr, _ := rf.trigger()
	if tr.Outcome != api.RunTimedOut || time.Since(start) > 60*time.Second {
		t.Fatalf("trigger %+v after %s", tr, time.Since(start))
	}
	// On a loaded machine the agent may still be starting when its 5 s
	// are over: either way it hangs, and the timeout ends it.
	if len(rf.api.MainRequests()) == 0 {
		t.Logf("the agent had not reached the model within its timeout (a slow start)")
	}
	var rows []api.UnitInfo
	rf.MustJSON(&rows, "list")
	if len(rows) != 1 || rows[0].PID != 0 {
		t.Errorf("still running: %+v", rows)
	}
}

// agent is an agentFleet on the current daemon (a new one after
// restartDaemon), with its own event subscription.
func (rf *runFleet) agent() *agentFleet {
	rf.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	rf.t.Cleanup(cancel)
	c, err := client.Dial(ctx, rf.Socket)
	if err != nil {
		rf.t.Fatal(err)
	}
	rf.t.Cleanup(func() { c.Close() })
	events, err := c.Subscribe(ctx)
	if err != nil {
		rf.t.Fatal(err)
	}
	return &agentFleet{tuiFleet: &tuiFleet{fleet: rf.fleet, name: "a", home: rf.home, pkg: rf.spec.pkg, events: events},
		api: rf.api, work: rf.work}
}

// askAndSee types prompt into the agent once it is ready and returns the
// main request that carried it to the model.
func (rf *runFleet) askAndSee(af *agentFleet, prompt string, states ...string) modelapi.Request {
	rf.t.Helper()
	if states == nil {
		states = []string{"ready"}
	}
	af.waitState(states...)
	before := len(rf.api.Requests())
	af.ask(prompt)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, _, err := rf.api.WaitRequest(ctx, before, func(r modelapi.Request) bool {
		return r.Main && strings.Contains(string(r.Body), prompt)
	})
	if err != nil {
		var reqs, sends []string
		for _, q := range rf.api.Requests() {
			reqs = append(reqs, fmt.Sprintf("%s %s main=%v %.200s", q.Method, q.Path, q.Main, q.Body))
		}
		for _, l := range strings.Split(rf.Log(), "\n") {
			if strings.Contains(l, "input sent") || strings.Contains(l, "Enter") || strings.Contains(l, "paste") {
				sends = append(sends, l)
			}
		}
		rf.t.Fatalf("the prompt %q never reached the model: %v\nrequests:\n%s\nthe daemon's sends:\n%s\nscreen %s",
			prompt, err, strings.Join(reqs, "\n"), strings.Join(sends, "\n"), af.lastScreen())
	}
	return r
}

// TestAgent_AResumedAgentRemembers: with resume = true, after `harness
// restart` and after the daemon is killed and started again, the agent's
// next request to the model carries the earlier turns of its session;
// after `harness restart --fresh` it does not.
func TestAgent_AResumedAgentRemembers(t *testing.T) {
	for _, spec := range []agentSpec{claudeSpec, codexSpec, geminiSpec} {
		t.Run(spec.agent, func(t *testing.T) {
			t.Parallel() // each agent has its own daemon, model server, HOME and workdir
			rf := newRunFleet(t, spec, "resume = true\nmcp_wire = false")
			rf.api.Script(modelapi.Turn{Text: "Noted the word."}, modelapi.Turn{Text: "It was papaya."},
				modelapi.Turn{Text: "Still papaya."}, modelapi.Turn{Text: "What word?"})
			if out, errOut, code := rf.Run("start", "a"); code != 0 {
				t.Fatalf("start: %s%s", out, errOut)
			}
			af := rf.agent()
			const secret = "Remember the word PAPAYA-7731."
			rf.askAndSee(af, secret)
			af.screenHas("the answer", "Noted the word")
			if r := rf.lastRun(); r.PID == 0 {
				t.Fatalf("run %+v", r)
			}

			if out, errOut, code := rf.Run("restart", "a"); code != 0 {
				t.Fatalf("restart: %s%s", out, errOut)
			}
			if r := rf.askAndSee(af, "Tell me the word I gave you."); !strings.Contains(string(r.Body), "PAPAYA-7731") {
				t.Errorf("after restart the request lacks the earlier turn: %.400s", r.Body)
			}
			af.screenHas("the second answer", "It was papaya")

			rf.restartDaemon()
			af = rf.agent()
			if r := rf.askAndSee(af, "Now tell me that word again."); !strings.Contains(string(r.Body), "PAPAYA-7731") {
				t.Errorf("after a daemon SIGKILL the request lacks the earlier turn: %.400s", r.Body)
			}
			af.screenHas("the third answer", "Still papaya")

			if out, errOut, code := rf.Run("restart", "a", "--fresh"); code != 0 {
				t.Fatalf("restart --fresh: %s%s", out, errOut)
			}
			if r := rf.askAndSee(af, "Tell me any word you know."); strings.Contains(string(r.Body), "PAPAYA-7731") {
				t.Errorf("after restart --fresh the request carries the old session: %.400s", r.Body)
			}
		})
	}
}

// unitRow is harness a's list --json row.
func (rf *runFleet) unitRow() api.UnitInfo {
	rf.t.Helper()
	var rows []api.UnitInfo
	rf.MustJSON(&rows, "list")
	for _, r := range rows {
		if r.Name == "a" {
			return r
		}
	}
	rf.t.Fatal("no row for a")
	return api.UnitInfo{}
}

// waitRow polls a's list row until ok, for up to d.
func (rf *runFleet) waitRow(what string, d time.Duration, ok func(api.UnitInfo) bool) api.UnitInfo {
	rf.t.Helper()
	deadline := time.Now().Add(d)
	for {
		r := rf.unitRow()
		if ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			out, _, _ := rf.Run("runs", "a")
			rf.t.Fatalf("no %s within %s: row %+v\nruns:\n%s", what, d, r, out)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestAgent_AUsageLimitParksTheAgentUntilItsReset: the real Claude Code
// gets a scripted usage-limit answer. The harness shows hold usage_limit
// until the reset the agent shows, its run ends limited, no restart is
// counted and nothing starts it before the reset; then it is started
// again and, with resume = true, the model sees the earlier turns. With
// on_limit = "stop" it is stopped instead.
//
// Claude Code shows a plan's usage limit ("resets 12:05am") only to the
// minute, so a test that waits for that reset waits up to 80 s: park
// reads that screen and checks the hold, and resume waits out a reset
// Claude Code shows to the second, a 429 whose message says "try again
// in 3 seconds" (as an API key's rate limit does).
func TestAgent_AUsageLimitParksTheAgentUntilItsReset(t *testing.T) {
	// startRemembering starts Claude Code with resume = true and gives it
	// a word to remember, for the resumed session to show.
	startRemembering := func(t *testing.T) (*runFleet, *agentFleet) {
		rf := newRunFleet(t, claudeSpec, "resume = true\nmcp_wire = false")
		rf.api.Script(modelapi.Turn{Text: "Noted the word."})
		if out, errOut, code := rf.Run("start", "a"); code != 0 {
			t.Fatalf("start: %s%s", out, errOut)
		}
		af := rf.agent()
		rf.askAndSee(af, "Remember the word KIWI-4410.")
		af.screenHas("the answer", "Noted the word")
		return rf, af
	}
	t.Run("park", func(t *testing.T) {
		t.Parallel() // each subtest has its own daemon, model server, HOME and workdir
		rf, af := startRemembering(t)
		limited := rf.lastRun()

		reset := time.Now().Add(20 * time.Second)
		rf.api.Script(modelapi.Turn{Error: &modelapi.Error{Status: 429, UsageLimit: true, ResetAt: reset}})
		rf.askAndSee(af, "Go on with the work.")
		row := rf.waitRow("hold usage_limit", time.Minute, func(r api.UnitInfo) bool { return r.Hold != nil })
		h := row.Hold
		// Claude Code shows the reset as a clock time of the minute
		// ("resets 12:05am"): until is that minute's end at the latest,
		// plus the jitter: a twentieth of the wait (hold.OnLimit), and
		// the wait to the minute's end is up to 80 s here, so up to 4 s
		// (a CI run saw 2.8 s).
		if h.Reason != api.HoldUsageLimit || h.Until == nil || h.Until.Before(reset.Add(-time.Minute)) ||
			h.Until.After(reset.Truncate(time.Minute).Add(time.Minute+5*time.Second)) {
			t.Fatalf("hold %+v (reset %s)", h, reset)
		}
		if row.RestartCount != 0 || row.PID != 0 || !row.Enabled {
			t.Errorf("parked row %+v", row)
		}
		r := rf.lastRun()
		if r.ID != limited.ID || r.Outcome != api.RunLimited || r.LimitUntil == nil || !r.LimitUntil.Equal(*h.Until) {
			out, _, _ := rf.Run("runs", "a")
			t.Errorf("the limited run %+v (the first %d)\n%s", r, limited.ID, out)
		}
		// A wait for limited that starts after the park stopped the agent
		// still hears limited, with the reset the agent showed.
		var w agentWait
		if out, errOut, code := rf.Run("wait", "a", "--state", "limited", "--timeout", "5s", "--json"); code != 0 ||
			json.Unmarshal([]byte(out), &w) != nil || w.AgentState != "limited" || w.TimedOut || w.Until == nil {
			t.Errorf("wait --state limited while parked: exit %d: %s%s", code, out, errOut)
		}
		// A start is refused with held until then; nothing else starts it.
		if _, errOut, code := rf.Run("start", "a"); code == 0 || !strings.Contains(errOut, "usage_limit") {
			t.Errorf("start while parked: exit %d %s", code, errOut)
		}
		if row, last := rf.unitRow(), rf.lastRun(); row.PID != 0 || row.Hold == nil || last.ID != limited.ID {
			t.Errorf("started before the reset: row %+v, last run %+v", row, last)
		}
	})
	t.Run("resume", func(t *testing.T) {
		t.Parallel()
		rf, af := startRemembering(t)

		rf.api.Script(modelapi.Turn{Error: &modelapi.Error{Status: 429, Message: "Usage limit reached for your plan. Try again in 3 seconds."}},
			modelapi.Turn{Text: "It was kiwi."})
		asked := time.Now()
		rf.askAndSee(af, "Go on with the work.")
		row := rf.waitRow("hold usage_limit", time.Minute, func(r api.UnitInfo) bool { return r.Hold != nil })
		h := row.Hold
		// "in 3 seconds", read when the screen shows it, plus a jitter of
		// at least 1 s (hold.OnLimit).
		if h.Reason != api.HoldUsageLimit || h.Until == nil || h.Until.Before(asked.Add(2*time.Second)) ||
			h.Until.After(time.Now().Add(5*time.Second)) {
			t.Fatalf("hold %+v (asked at %s)", h, asked)
		}
		r := rf.lastRun()
		back := rf.waitRow("the harness back after the reset", time.Minute, func(r api.UnitInfo) bool { return r.PID != 0 })
		next := rf.lastRun()
		if next.ID == r.ID || next.StartedAt.Before(*h.Until) || back.Hold != nil || back.RestartCount != 0 {
			t.Errorf("restarted before the reset %s: run %+v, row %+v", h.Until, next, back)
		}
		// Resumed, Claude Code shows the conversation again, the old limit
		// message last: its screen reads limited until the next prompt
		// (which does not park it again: that limit is not this run's).
		if req := rf.askAndSee(af, "Tell me the word I gave you.", "ready", "limited"); !strings.Contains(string(req.Body), "KIWI-4410") {
			t.Errorf("the resumed session lacks the earlier turn: %.300s", req.Body)
		}
		af.screenHas("the answer after the reset", "It was kiwi")
		// The answer is drawn before the turn ends: wait for ready, then
		// the harness must still run, unheld (the old limit message on
		// its screen parked nothing).
		af.waitState("ready")
		if row := rf.unitRow(); row.PID == 0 || row.Hold != nil || row.AgentState != "ready" {
			t.Errorf("after the answer: %+v", row)
		}
	})
	t.Run("stop", func(t *testing.T) {
		t.Parallel()
		rf := newRunFleet(t, claudeSpec, "on_limit = \"stop\"\nmcp_wire = false")
		rf.api.Script(modelapi.Turn{Error: &modelapi.Error{Status: 429, UsageLimit: true, ResetAt: time.Now().Add(time.Hour)}})
		if out, errOut, code := rf.Run("start", "a"); code != 0 {
			t.Fatalf("start: %s%s", out, errOut)
		}
		af := rf.agent()
		rf.askAndSee(af, "Start the work.")
		row := rf.waitRow("a stopped harness", time.Minute, func(r api.UnitInfo) bool { return r.State == "stopped" })
		if row.Hold != nil || row.Enabled || row.RestartCount != 0 {
			t.Errorf("stopped row %+v", row)
		}
		if r := rf.lastRun(); r.Outcome != api.RunLimited || r.LimitUntil != nil {
			t.Errorf("run %+v", r)
		}
	})
}

// TestAgent_TheLoopGuardEndsAnAgentRepeatingItself: the real Claude Code,
// scripted to run the same shell command again and again, is ended by
// loop_guard = 3 at the third same call in a row (seen through its
// PreToolUse hook), with outcome loop and the call named in the run.
func TestAgent_TheLoopGuardEndsAnAgentRepeatingItself(t *testing.T) {
	spec := claudeSpec
	spec.args = nil
	rf := newRunFleet(t, spec, "restart = \"no\"\nprompt = \"Check the status.\"\napproval = \"auto\"\nloop_guard = 3\nmcp_wire = false")
	for range 8 {
		rf.api.Script(modelapi.Turn{Shell: "echo looping"})
	}
	tr, out := rf.trigger()
	r := rf.lastRun()
	if tr.Outcome != api.RunLoop || r.Outcome != api.RunLoop || !strings.Contains(r.Note, "3 times in a row") ||
		!strings.Contains(r.Note, "Bash") || !strings.Contains(r.Note, "echo looping") {
		t.Fatalf("trigger %+v %s\nrun %+v\nlog:\n%s", tr, out, r, rf.Log())
	}
	if n := len(rf.api.MainRequests()); n < 3 || n > 5 {
		t.Errorf("%d main requests: the guard ended it late or early", n)
	}
}

// TestAgent_MaxCostPerDayHoldsTheNextRun: a job of the real Claude Code
// whose run costs more than max_cost_per_day (the cost Claude Code reports
// for the scripted token counts) is held at its next firing, until
// midnight, with outcome held.
func TestAgent_MaxCostPerDayHoldsTheNextRun(t *testing.T) {
	spec := claudeSpec
	spec.args = nil
	rf := newRunFleet(t, spec, "restart = \"no\"\nprompt = \"Summarise.\"\nmax_cost_per_day = 0.01\nmcp_wire = false")
	rf.api.Script(modelapi.Turn{Text: "A long summary.", Usage: modelapi.Usage{Input: 200000, Output: 2000}})
	if tr, out := rf.trigger(); tr.Outcome != api.RunOK {
		t.Fatalf("first run: %+v %s", tr, out)
	}
	if r := rf.lastRun(); r.CostUSD <= 0.01 {
		t.Fatalf("the first run cost %v: the budget test needs more", r.CostUSD)
	}
	tr, out := rf.trigger()
	r := rf.lastRun()
	if r.Outcome != api.RunHeld || !strings.Contains(r.Note, "max_cost_per_day") || !strings.Contains(out, "held") {
		t.Fatalf("second firing: %+v %s\nrun %+v", tr, out, r)
	}
	if row := rf.unitRow(); row.Hold == nil || row.Hold.Reason != api.HoldBudget || row.Hold.Until == nil {
		t.Errorf("row %+v", row)
	}
}

// mainWith counts the model server's main requests from index from on
// whose body holds s.
func (rf *runFleet) mainWith(from int, s string) int {
	n := 0
	for _, r := range rf.api.Requests()[from:] {
		if r.Main && strings.Contains(string(r.Body), s) {
			n++
		}
	}
	return n
}

// waitPromptRequest waits for a main request from index from on that
// carries prompt.
func (rf *runFleet) waitPromptRequest(af *agentFleet, from int, prompt string) {
	rf.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, _, err := rf.api.WaitRequest(ctx, from, func(r modelapi.Request) bool {
		return r.Main && strings.Contains(string(r.Body), prompt)
	}); err != nil {
		rf.t.Fatalf("the prompt %q never reached the model after the agent was ready: %v\nscreen %s\nlog:\n%s", prompt, err, af.screen(), rf.Log())
	}
}

// TestAgent_AnInteractivePromptIsTypedOnceReady: an interactive harness
// with prompt = "Make the file" starts Claude Code with no prompt
// argument; once its agent is first ready, harness types the prompt: the
// model server gets it after the ready, exactly once, and the agent is
// ready again. A restart starts a new conversation and types it again;
// with resume = true the resumed conversation is not given it again.
func TestAgent_AnInteractivePromptIsTypedOnceReady(t *testing.T) {
	const prompt = "Make the file"
	for _, resume := range []bool{false, true} {
		t.Run(fmt.Sprintf("resume=%v", resume), func(t *testing.T) {
			rf := newRunFleet(t, claudeSpec, fmt.Sprintf("prompt = %q\nresume = %v\nmcp_wire = false", prompt, resume))
			rf.api.Script(modelapi.Turn{Text: "Made it."}, modelapi.Turn{Text: "Made it again."}, modelapi.Turn{Text: "Fine."})
			af := rf.agent() // subscribed before the start: the first ready is seen
			if out, errOut, code := rf.Run("start", "a"); code != 0 {
				t.Fatalf("start: %s%s", out, errOut)
			}
			r0 := rf.lastRun()
			run := r0.ID
			// The agent starts as an operator starts it: no prompt argument.
			if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", r0.PID)); err != nil || strings.Contains(string(cmdline), prompt) {
				t.Errorf("the agent's argv (%v) carries the prompt: %q", err, cmdline)
			}
			af.waitAgent("the first ready", func(w agentWait) bool { return w.AgentState == "ready" })
			rf.waitPromptRequest(af, 0, prompt)
			af.screenHas("the answer", "Made it.")
			af.waitState("ready")
			if n := rf.mainWith(0, prompt); n != 1 {
				t.Errorf("%d main requests carry the prompt, want 1", n)
			}
			if log := rf.Log(); strings.Count(log, "prompt typed") != 1 {
				t.Errorf("want one prompt typed in the log:\n%s", log)
			}

			before := len(rf.api.Requests())
			if out, errOut, code := rf.Run("restart", "a"); code != 0 {
				t.Fatalf("restart: %s%s", out, errOut)
			}
			if r := rf.lastRun(); r.ID == run {
				t.Fatalf("no new run after restart: %+v", r)
			}
			if !resume {
				rf.waitPromptRequest(af, before, prompt)
				af.screenHas("the second answer", "Made it again.")
				af.waitState("ready")
				if n := rf.mainWith(before, prompt); n != 1 {
					t.Errorf("after restart %d main requests carry the prompt, want 1", n)
				}
				return
			}
			// Resumed: the first request of the new run is ours, and the
			// prompt is in it only as the earlier turn.
			r := rf.askAndSee(af, "Anything else?")
			if n := strings.Count(string(r.Body), prompt); n != 1 {
				t.Errorf("the resumed request carries the prompt %d times, want once (the earlier turn): %.600s", n, r.Body)
			}
			for _, q := range rf.api.Requests()[before:] {
				if q.Main && !strings.Contains(string(q.Body), "Anything else?") {
					t.Errorf("a main request of the resumed run before ours: %.400s", q.Body)
				}
			}
		})
	}
}

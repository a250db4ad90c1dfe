package control

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/supervise"
	"github.com/harness-dev/harness/internal/testenv"
)

// gitRepo is a temp repository with one commit on main.
func gitRepo(t *testing.T) string {
	t.Helper()
	testenv.Program(t, "git")
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "base"}} {
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo
}

func TestScenario_DiffAndReviewRefuseWhatTheyCannotDo(t *testing.T) {
	repo := gitRepo(t)
	plain := t.TempDir()
	f := newFixture(t, sleeper("plain", "workdir = \""+plain+"\"")+
		sleeper("wt", "worktree = { repo = \""+repo+"\" }")+sleeper("none", ""))
	for _, c := range []struct {
		name string
		code errcode.Code
		says string
	}{
		{"nope", errcode.UnknownHarness, "nope"},
		{"plain", errcode.InvalidArgument, "not a git checkout"},
		{"wt", errcode.InvalidArgument, "no worktree yet"},
		{"none", errcode.InvalidArgument, "no worktree and no workdir"},
	} {
		err := f.call(api.OpDiff, api.DiffArgs{Name: c.name}, nil)
		if errcode.Of(err) != c.code || !strings.Contains(err.Error(), c.says) {
			t.Errorf("diff %s: %v, want %s saying %q", c.name, err, c.code, c.says)
		}
	}
	for _, c := range []struct {
		comments []string
		code     errcode.Code
	}{
		{nil, errcode.InvalidArgument},
		{[]string{"a.go:x: not a line"}, errcode.InvalidArgument},
		{[]string{"../a.go:1: outside"}, errcode.InvalidArgument},
		{[]string{"a.go:1: " + strings.Repeat("long ", 4000)}, errcode.InvalidArgument}, // over the bound
		{[]string{"a.go:1: fine"}, errcode.NotRunning},                                  // wt is stopped
	} {
		if err := f.call(api.OpReview, api.ReviewArgs{Name: "wt", Comments: c.comments}, nil); errcode.Of(err) != c.code {
			t.Errorf("review %.40q: %v, want %s", c.comments, err, c.code)
		}
	}
	// A comment is typed as text: no key of a control character gets in.
	f.mustCall(api.OpStart, api.NamesArgs{Name: "plain"}, nil)
	var res api.ReviewResult
	f.mustCall(api.OpReview, api.ReviewArgs{Name: "plain", Comments: []string{"a.go:3: up\x1b[A and\x03 stop\r\nnow"}}, &res)
	if want := "a.go:3: up[A and stop now"; res.Status != api.ReviewQueued || !strings.HasSuffix(res.Text, want) {
		t.Errorf("review %+v, want its text to end %q", res, want)
	}
}

// TestScenario_TurnDoneFollowsWorkThenReady: an agent seen working and
// then ready publishes turn_done with its worktree's diff stat; ready
// without work since, or after the run ended, publishes nothing, nor does
// a program without an agent adapter.
func TestScenario_TurnDoneFollowsWorkThenReady(t *testing.T) {
	repo := gitRepo(t)
	got := make(chan supervise.Event, 8)
	f := newFixture(t, sleeper("wt", "agent = \"demo\"\nworktree = { repo = \""+repo+"\" }")+
		sleeper("gen", "worktree = { repo = \""+repo+"\", branch = \"gen\" }"), func(f *fixture) {
		f.onEvent = func(ev supervise.Event) {
			if ev.Kind == api.EventTurnDone {
				got <- ev
			}
		}
	})
	f.c.opt.Paths.StateDir = t.TempDir() // where the worktree goes, absolute
	f.mustCall(api.OpStart, api.NamesArgs{Name: "wt"}, nil)
	u, err := f.c.lookup("wt")
	if err != nil {
		t.Fatal(err)
	}
	path := f.c.worktreePath("wt")
	if err := os.WriteFile(filepath.Join(path, "new.txt"), []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := func(run uint64, s api.AgentState) supervise.Event {
		return supervise.Event{Kind: api.EventAgent, Unit: "wt", RunID: run, Agent: &api.AgentView{AgentState: s}}
	}
	none := func(what string) {
		select {
		case ev := <-got:
			t.Fatalf("%s: turn_done %+v", what, ev)
		case <-time.After(2 * time.Second):
		}
	}
	f.c.turnDoneHook(u, agent(1, api.AgentReady))
	none("ready without work")
	f.c.turnDoneHook(u, agent(1, api.AgentWorking))
	f.c.turnDoneHook(u, agent(1, api.AgentWaiting))
	f.c.turnDoneHook(u, agent(1, api.AgentReady))
	select {
	case ev := <-got:
		if ev.RunID != 1 || ev.Diff == nil || *ev.Diff != (api.DiffStat{Files: 1, Added: 2}) {
			t.Errorf("turn_done %+v (diff %+v)", ev, ev.Diff)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no turn_done after working then ready")
	}
	f.c.turnDoneHook(u, agent(1, api.AgentWorking))
	f.c.turnDoneHook(u, supervise.Event{Kind: supervise.EventExit, Unit: "wt", RunID: 1})
	f.c.turnDoneHook(u, agent(2, api.AgentReady))
	none("ready in a new run")

	// A program without an agent adapter is ready at every pause: no turns.
	f.mustCall(api.OpStart, api.NamesArgs{Name: "gen"}, nil)
	g, _ := f.c.lookup("gen")
	f.c.turnDoneHook(g, supervise.Event{Kind: api.EventAgent, Unit: "gen", RunID: 3, Agent: &api.AgentView{AgentState: api.AgentWorking}})
	f.c.turnDoneHook(g, supervise.Event{Kind: api.EventAgent, Unit: "gen", RunID: 3, Agent: &api.AgentView{AgentState: api.AgentReady}})
	none("a generic program")
}

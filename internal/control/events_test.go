package control

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/runs"
	"github.com/harness-dev/harness/internal/supervise"
)

// eventParts records what control does with the notifier and the webhook
// receiver it builds: which Control each was built on, how many units
// existed then, every event observed and every configuration applied.
type eventParts struct {
	mu           sync.Mutex
	ntfOn, whOn  *Control
	unitsAtBuild []int
	observed     []string
	ntfApplied   [][]string
	whApplied    [][]string
}

func unitCount(c *Control) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.units)
}

func eventKey(ev api.Event) string {
	return fmt.Sprintf("%s %s %s %d", ev.Unit, ev.Kind, ev.State, ev.RunID)
}

type recNotifier struct{ p *eventParts }

func (n recNotifier) Observe(ev api.Event) {
	n.p.mu.Lock()
	n.p.observed = append(n.p.observed, eventKey(ev))
	n.p.mu.Unlock()
}

func (n recNotifier) Apply(t map[string]*config.Notify) {
	n.p.mu.Lock()
	n.p.ntfApplied = append(n.p.ntfApplied, slices.Sorted(maps.Keys(t)))
	n.p.mu.Unlock()
}

func (n recNotifier) Test(context.Context, string) (api.NotifyTestResult, error) {
	return api.NotifyTestResult{}, nil
}

func (n recNotifier) Stats() []api.NotifyStats { return []api.NotifyStats{{Name: "recorded"}} }

type recWebhooks struct{ p *eventParts }

func (w recWebhooks) Apply(h map[string]*config.Webhook) {
	w.p.mu.Lock()
	w.p.whApplied = append(w.p.whApplied, slices.Sorted(maps.Keys(h)))
	w.p.mu.Unlock()
}

func (w recWebhooks) Info() *api.WebhookInfo { return &api.WebhookInfo{URL: "http://recorded"} }

func (p *eventParts) options(f *fixture) {
	f.newNotifier = func(c *Control) Notifier {
		p.mu.Lock()
		p.ntfOn = c
		p.unitsAtBuild = append(p.unitsAtBuild, unitCount(c))
		p.mu.Unlock()
		return recNotifier{p}
	}
	f.newWebhooks = func(c *Control) (Webhooks, error) {
		p.mu.Lock()
		p.whOn = c
		p.unitsAtBuild = append(p.unitsAtBuild, unitCount(c))
		p.mu.Unlock()
		return recWebhooks{p}, nil
	}
}

const eventsToml = `
[harness.j]
cmd = "sh"
args = ["-c", "echo done"]
restart = "no"

[notify.a]
command = ["true"]

[webhook.gh]
path = "/hooks/github"
verify = "github"
secret = "${GH}"
env = { GH = "s3cret" }
harnesses = ["j"]
`

// TestScenario_NotifierAndWebhooksAreBuiltOnTheControlTheyServe: control
// builds the notifier and the webhook receiver with the daemon's
// constructors on itself, before any unit exists (so no event comes
// before the notifier and neither holds a Control that is not there yet);
// it feeds the notifier every event the daemon sees, puts the tables and
// routes in force at start and at every reload, and daemon_info and a
// webhook's trigger reach them through it.
func TestScenario_NotifierAndWebhooksAreBuiltOnTheControlTheyServe(t *testing.T) {
	p := &eventParts{}
	var mu sync.Mutex
	var published []string
	f := newFixture(t, eventsToml, p.options, func(f *fixture) {
		f.onEvent = func(ev supervise.Event) {
			mu.Lock()
			published = append(published, eventKey(ev))
			mu.Unlock()
		}
	})
	p.mu.Lock()
	if p.ntfOn != f.c || p.whOn != f.c {
		t.Errorf("built on %p and %p, want the Control New returned (%p)", p.ntfOn, p.whOn, f.c)
	}
	if !slices.Equal(p.unitsAtBuild, []int{0, 0}) {
		t.Errorf("units when the parts were built: %v, want none", p.unitsAtBuild)
	}
	if !slices.Equal(p.ntfApplied[len(p.ntfApplied)-1], []string{"a"}) || !slices.Equal(p.whApplied[len(p.whApplied)-1], []string{"gh"}) {
		t.Errorf("applied at New: notify %v, webhooks %v", p.ntfApplied, p.whApplied)
	}
	p.mu.Unlock()

	var info api.DaemonInfo
	f.mustCall(api.OpDaemonInfo, api.NoArgs{}, &info)
	if info.Webhooks == nil || info.Webhooks.URL != "http://recorded" || len(info.Notify) != 1 || info.Notify[0].Name != "recorded" {
		t.Errorf("daemon_info: webhooks %+v, notify %+v", info.Webhooks, info.Notify)
	}

	// The receiver's trigger is the Control it was built on.
	res, err := p.whOn.TriggerWebhook(context.Background(), "j", []string{"HARNESS_EVENT_FILE=/dev/null"})
	if err != nil || res.RunID == 0 {
		t.Fatalf("trigger: %+v, %v", res, err)
	}
	f.waitStates(map[string]string{"j": "stopped"}) // the job ran and ended

	f.write(eventsToml + "\n[notify.b]\ncommand = [\"true\"]\n[webhook.gl]\npath = \"/hooks/gitlab\"\nverify = \"gitlab\"\nsecret = \"${GL}\"\nenv = { GL = \"t\" }\nharnesses = [\"j\"]\n")
	f.mustCall(api.OpReload, api.NoArgs{}, nil)
	p.mu.Lock()
	if !slices.Equal(p.ntfApplied[len(p.ntfApplied)-1], []string{"a", "b"}) || !slices.Equal(p.whApplied[len(p.whApplied)-1], []string{"gh", "gl"}) {
		t.Errorf("applied after reload: notify %v, webhooks %v", p.ntfApplied, p.whApplied)
	}
	p.mu.Unlock()

	f.close() // every actor has ended: no event is still on its way
	mu.Lock()
	defer mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	slices.Sort(published)
	slices.Sort(p.observed)
	if len(published) == 0 || !slices.Equal(published, p.observed) {
		t.Errorf("the daemon saw %q, the notifier %q", published, p.observed)
	}
}

// TestScenario_AWebhookReceiverThatCannotBeBuiltFailsNew: the daemon's
// constructor failing (webhook_listen taken) fails New with its error,
// and no unit was built.
func TestScenario_AWebhookReceiverThatCannotBeBuiltFailsNew(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse(filepath.Join(dir, "harness.toml"), []byte(eventsToml))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := runs.Open(filepath.Join(dir, "runs.jsonl"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	taken := errors.New("webhook_listen: address already in use")
	var built bool
	c, err := New(cfg, Options{
		Runs:        rs,
		Logger:      quiet,
		NewNotifier: func(*Control) Notifier { built = true; return recNotifier{&eventParts{}} },
		NewWebhooks: func(*Control) (Webhooks, error) { return nil, taken },
		NewDeps: func(string, supervise.Kind) (supervise.Deps, error) {
			t.Error("a unit was built after the webhook receiver failed")
			return supervise.Deps{Logger: quiet}, nil
		},
	})
	if c != nil || !errors.Is(err, taken) {
		t.Fatalf("New = %v, %v; want the constructor's error", c, err)
	}
	if !built {
		t.Error("the notifier was not built first")
	}
}

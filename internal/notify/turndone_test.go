package notify

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
)

func TestScenario_TurnDoneCarriesTheStatAndLinksToTheChanges(t *testing.T) {
	r := newReceiver(t)
	n := New(Options{Source: fakeSource{}, Host: "box", Dashboard: func(h string) string { return "http://127.0.0.1:9/h/" + h }})
	t.Cleanup(n.Close)
	tb := table("hook", r.URL)
	tb.On = []string{config.NotifyTurnDone}
	n.Apply(map[string]*config.Notify{"hook": tb})
	n.Observe(api.Event{Kind: api.EventTurnDone, Unit: "svc", RunID: 4, State: "running", Time: time.Now(),
		Diff: &api.DiffStat{Files: 2, Added: 10, Deleted: 3}})
	r.wait(t, 1)
	var m Message
	if err := json.Unmarshal([]byte(r.bodies[0]), &m); err != nil {
		t.Fatal(err)
	}
	if m.Event != config.NotifyTurnDone || m.Diff == nil || *m.Diff != (api.DiffStat{Files: 2, Added: 10, Deleted: 3}) ||
		!strings.Contains(m.Reason, "2 files changed, +10 -3") {
		t.Errorf("message %+v", m)
	}
	var link string
	for _, a := range m.Actions {
		if a.URL != "" {
			link = a.URL
		}
	}
	if link != "http://127.0.0.1:9/h/svc#changes" {
		t.Errorf("link %q in %+v", link, m.Actions)
	}
}

package notify

import (
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/actionlink"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
)

// remoteSource knows one other machine's harness, "box:svc".
type remoteSource struct{ fakeSource }

func (remoteSource) Harness(name string) (HarnessInfo, bool) {
	if name == "box:svc" {
		return HarnessInfo{Remote: true, HostName: "box", HostAddr: "ssh://me@box", Unit: "svc"}, true
	}
	return HarnessInfo{}, false
}

// TestScenario_AnotherHostsWaitingAgentIsToldForThatHost: a waiting
// prompt of a [host.NAME] notify host's harness is titled for that host,
// its commands reach it with --host, and it carries no action link even
// where the table asks for them (a link answers this machine's agents).
func TestScenario_AnotherHostsWaitingAgentIsToldForThatHost(t *testing.T) {
	r := newReceiver(t)
	tb := table(config.FormatJSON, r.URL)
	tb.ActionLinks, tb.ActionTTL = true, time.Minute
	n := New(Options{Source: remoteSource{}, Host: "laptop", Links: actionlink.New(nil), PublicURL: func() string { return "https://laptop:7443/" }})
	n.Apply(map[string]*config.Notify{"json": tb})
	t.Cleanup(n.Close)
	ev := waitingWithID(3, "touch made-by-agent", "Yes", "No")
	ev.Unit = "box:svc"
	observe(n, []api.Event{ev})
	r.wait(t, 1)
	m := r.message(t, 0)
	if m.Harness != "box:svc" || m.Host != "box" || m.Title != "svc is waiting for you on box" {
		t.Fatalf("message: %+v", m)
	}
	for _, a := range m.Actions {
		if a.URL != "" || a.Method != "" {
			t.Errorf("an action link for another host's prompt: %+v", a)
		}
		if a.Command != "" && !strings.HasPrefix(a.Command, "harness --host 'ssh://me@box' ") {
			t.Errorf("a command not for that host: %q", a.Command)
		}
	}
	if len(m.Actions) == 0 || m.Actions[0].Command != "harness --host 'ssh://me@box' answer svc Yes" {
		t.Fatalf("actions: %+v", m.Actions)
	}
}

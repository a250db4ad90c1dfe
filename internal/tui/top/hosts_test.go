package top

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// fleetsOf is a Fleets over fake daemons: labels a, b, ... in order;
// a nil daemon is a host that could not be reached. It returns each live
// host's event stream for the test to feed.
func fleetsOf(t *testing.T, daemons ...*fakeDaemon) (*Fleets, []chan api.Event) {
	t.Helper()
	var srcs []*hostSource
	var chans []chan api.Event
	for i, f := range daemons {
		label := string(rune('a' + i))
		s := &hostSource{HostAddr: HostAddr{Label: label, Addr: "ssh://" + label}}
		ch := make(chan api.Event, 8)
		chans = append(chans, ch)
		if f == nil {
			s.down = "unreachable: ssh: connect to host " + label + " port 22: Connection refused"
		} else {
			s.backend, s.events = f, ch
		}
		srcs = append(srcs, s)
	}
	fl := newFleets(srcs)
	t.Cleanup(fl.Close)
	return fl, chans
}

// relay hands the model the next event the Fleets joined.
func relay(t *testing.T, d *driver, fl *Fleets) {
	t.Helper()
	select {
	case ev := <-fl.Events():
		d.event(ev)
	case <-time.After(5 * time.Second):
		t.Fatal("no event came through the joined stream")
	}
}

// TestScenario_SeveralHostsInOneTable: `top --host a --host b --host c`
// with c unreachable: rows grouped by host (then project), each action
// and each event on a row goes to and comes from its own host under the
// host's own name, and a host whose connection ends becomes a heading
// that says so while the others stay.
func TestScenario_SeveralHostsInOneTable(t *testing.T) {
	a := smallFleet()
	b := newFakeDaemon()
	b.addUnit("alpha", "running") // the same name as a's: told apart by host
	b.addUnit("worker", "stopped")
	fl, chans := fleetsOf(t, a, b, nil)
	d := newDriver(t, a, 120, 30, func(o *Options) { o.Backend = fl })

	var got []string
	for _, l := range strings.Split(d.screen(), "\n")[2:15] {
		got = append(got, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"host a",
		"alpha running - 0 - - - 101",
		"beta stopped - 0 - - - -",
		"mcp.gitea running 12 tools 0 - - 7 -",
		"a · project web",
		"api running - 0 - - - -",
		"nightly stopped - 0 - 10:30:00 - -",
		"mcp.db failed 0 tools 0 - - 0 - exit 1",
		"host b",
		"alpha running - 0 - - - -",
		"worker stopped - 0 - - - -",
		"host c: unreachable: ssh: connect to host c port 22: Connection refused",
		"",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("table rows:\n%s\nwant:\n%s\nscreen:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), d.screen())
	}
	if title := strings.Split(d.screen(), "\n")[0]; !strings.Contains(title, "6 harnesses, 3 running · 2 upstreams · 3 hosts, 1 down") {
		t.Errorf("title %q", title)
	}

	// Down to b's worker; stop and start go to b, named as b names it.
	for d.m.sel != "b/worker" {
		before := d.m.sel
		d.key("down")
		if d.m.sel == before {
			t.Fatalf("cannot reach b/worker; selection %q\n%s", d.m.sel, d.screen())
		}
	}
	a.takeCalls()
	b.takeCalls()
	d.key("s")
	if calls := b.takeCalls(); len(calls) == 0 || calls[0] != "start worker" {
		t.Errorf("b's calls %v, want start worker first", calls)
	}
	if calls := a.takeCalls(); slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(c, "start") }) {
		t.Errorf("a got %v", calls)
	}
	if d.m.status != "start b/worker: running" {
		t.Errorf("status %q", d.m.status)
	}

	// An event of b's names b's unit: the model describes it on b.
	b.setState("alpha", "failed")
	chans[1] <- api.Event{Kind: "state", Unit: "alpha", State: "failed"}
	relay(t, d, fl)
	d.advance(time.Second)
	if calls := b.takeCalls(); !slices.Contains(calls, "describe alpha") {
		t.Errorf("b's calls after its event: %v", calls)
	}
	if l := rowAfter(d.screen(), "host b", "alpha"); !strings.Contains(l, "failed") {
		t.Errorf("b's alpha row %q\n%s", l, d.screen())
	}
	if l := rowAfter(d.screen(), "host a", "alpha"); !strings.Contains(l, "running") {
		t.Errorf("a's alpha row %q changed with b's", l)
	}

	// b goes away: its rows go, its heading says so, a stays.
	close(chans[1])
	relay(t, d, fl)
	d.advance(time.Second)
	if !strings.Contains(d.screen(), "host b: lost the connection") || strings.Contains(d.screen(), "\nworker ") {
		t.Errorf("after b went away:\n%s", d.screen())
	}
	if d.quit || !strings.Contains(d.screen(), "beta") {
		t.Errorf("the dashboard should stay on a:\n%s", d.screen())
	}
	if title := strings.Split(d.screen(), "\n")[0]; !strings.Contains(title, "3 hosts, 2 down") {
		t.Errorf("title %q", title)
	}

	// The last host going ends the dashboard.
	close(chans[0])
	select {
	case _, ok := <-fl.Events():
		if ok {
			t.Fatal("an event after the last host went away")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the joined stream did not end with its last host")
	}
}

// rowAfter is the first line containing name after the line containing
// heading.
func rowAfter(screen, heading, name string) string {
	after := false
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, heading) {
			after = true
		} else if after && strings.Contains(l, name) {
			return l
		}
	}
	return ""
}

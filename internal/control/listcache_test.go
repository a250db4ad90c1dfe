package control

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/mask"
	"github.com/harness-dev/harness/internal/term"
)

// listSecret is on the agent's dialog, and becomes a secret (an env_file
// value) at a reload: no credential shape, so only the masker's
// generation tells a row masked before from one masked after.
const listSecret = "s3cr3t-literal-0042"

// dialogFrame is Claude Code's permission dialog for a command.
func dialogFrame(command string) string {
	return `printf '\033[H\033[2J Bash command\r\n╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌\r\n ` + command +
		`\r\n╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌\r\n Do you want to proceed?\r\n ❯ 1. Yes\r\n   2. No\r\n'`
}

// redrawScript shows the dialog for a command carrying listSecret and
// draws the same frame again at every byte it reads: output that moves
// the activity, on a screen that stays the same.
var redrawScript = "stty raw -echo opost\n" + dialogFrame("deploy --key "+listSecret) +
	"\nwhile dd bs=1 count=1 2>/dev/null >/dev/null; do " + dialogFrame("deploy --key "+listSecret) + "; done\n"

// spinnerScript redraws a dialog every 50 ms, and its prompt once it read
// a byte: busy all along (since the same time), while its agent goes
// from waiting to the next state.
// (An asynchronous list's stdin is /dev/null unless it says otherwise.)
var spinnerScript = "stty raw -echo opost\nflag=$1\nexec 3<&0\n(dd bs=1 count=1 <&3 2>/dev/null >/dev/null; : >\"$flag\") &\n" +
	"while :; do if [ -e \"$flag\" ]; then printf '\\033[H\\033[2J❯ \\r\\n'; else " + dialogFrame("make deploy") + "; fi; sleep 0.05; done\n"

// TestScenario_TheCachedListIsTheFreshListAcrossChanges: the list op's
// answer, rows from the row cache, is byte for byte json.Marshal of the
// rows made afresh at the same time, after each thing that changes a row,
// each alone where it can be (the test says which inputs moved): idle
// time moving, a hours hold starting, the next firing moving, a unit
// stopping, output on a screen that stays the same, the masker learning a
// secret a dialog shows, a reload changing a description (and the table
// alone, before the actor hears of it), and an agent changing
// state while its terminal stays busy. Each list comes after one that
// cached every row, so a row served stale fails here; rows whose inputs
// did not change are served from the cache.
func TestScenario_TheCachedListIsTheFreshListAcrossChanges(t *testing.T) {
	dir := t.TempDir()
	redraw, spinner, flag := filepath.Join(dir, "redraw.sh"), filepath.Join(dir, "spinner.sh"), filepath.Join(dir, "answered")
	secrets := filepath.Join(dir, "secrets.env")
	for path, body := range map[string]string{redraw: redrawScript, spinner: spinnerScript, secrets: "KEY=" + listSecret + "\n"} {
		if err := os.WriteFile(path, []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	toml := func(description string, vaultKeys bool) string {
		vault := ""
		if vaultKeys {
			vault = "env_file = \"" + secrets + "\""
		}
		return sleeper("run", "idle_after = 0.3") +
			sleeper("stopme", "idle_after = 0.3") +
			sleeper("office", "hours = \"Mon-Fri 09:00-17:00\"\ndescription = \""+description+"\"") +
			sleeper("vault", vault) +
			sleeper("nightly", "schedule = \"@every 1h\"\nrestart = \"no\"") +
			"[harness.claude]\ncmd = \"sh\"\nargs = [\"" + redraw + "\"]\nagent = \"claude-code\"\nidle_after = 0.3\nstop_grace = 2\n" +
			"[harness.spinner]\ncmd = \"sh\"\nargs = [\"" + spinner + "\", \"" + flag + "\"]\nagent = \"claude-code\"\nidle_after = 5\nstop_grace = 2\n"
	}
	f := newFixture(t, toml("one", false), func(f *fixture) { f.masker = mask.New() })

	// check lists at now both ways and holds them equal; it returns the
	// answer and its bytes.
	check := func(what string, now time.Time) (listing, string) {
		t.Helper()
		l, err := f.c.listingAt(api.ListArgs{}, now)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := f.c.rowsAt(api.ListArgs{}, now)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(rows)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: the cached list differs from the fresh one\ncached %s\nfresh  %s", what, got, want)
		}
		if app := l.AppendJSON([]byte("x")); string(app) != "x"+string(got) {
			t.Fatalf("%s: AppendJSON appends %s, MarshalJSON is %s", what, app, got)
		}
		return l, string(got)
	}
	// settle waits for each harness to be idle, so nothing changes
	// between the two lists of a check.
	settle := func(names ...string) {
		t.Helper()
		for _, n := range names {
			var s api.Screen
			f.mustCall(api.OpScreen, api.ScreenArgs{Name: n, IdleS: 0.4, TimeoutS: 20}, &s)
		}
	}
	waitAgent := func(name string, states ...api.AgentState) {
		t.Helper()
		var w api.WaitResult
		f.mustCall(api.OpWait, api.WaitArgs{Name: name, State: states, TimeoutS: 30}, &w)
		if w.TimedOut {
			t.Fatalf("%s's agent is not %v: %+v\n%s", name, states, w, f.screenOf(name))
		}
	}
	inputs := func(name string) rowInputs {
		t.Helper()
		u, err := f.c.lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		return f.c.rowInputsOf(u, time.Now(), &agentCount{c: f.c})
	}
	// moved names what differs between two inputs of one unit; the
	// steps below hold themselves to changing one thing.
	moved := func(a, b rowInputs) string {
		var m []string
		for what, same := range map[string]bool{"tables": a.tables == b.tables, "status": a.status == b.status,
			"agent": a.agent == b.agent, "activity": a.act == b.act, "mask": a.mask == b.mask,
			"next": a.next == b.next, "hold": sameShownHold(a.hold, b.hold)} {
			if !same {
				m = append(m, what)
			}
		}
		slices.Sort(m)
		return strings.Join(m, ",")
	}
	rowOf := func(js, name string) api.UnitInfo {
		t.Helper()
		var rows []api.UnitInfo
		if err := json.Unmarshal([]byte(js), &rows); err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Name == name {
				return r
			}
		}
		t.Fatalf("no row %s in %s", name, js)
		return api.UnitInfo{}
	}

	f.mustCall(api.OpStart, api.NamesArgs{Names: []string{"run", "stopme", "claude", "spinner"}}, nil)
	waitAgent("claude", api.AgentWaiting)
	waitAgent("spinner", api.AgentWaiting)
	settle("run", "stopme", "claude")
	now := time.Now()
	first, js := check("started", now)
	if !strings.Contains(js, listSecret) {
		t.Fatalf("the dialog's command is not in the list: %s", js)
	}

	// The clock alone: idle time moves, and the rows stay cached.
	later, js2 := check("idle time moving", now.Add(1500*time.Millisecond))
	if a, b := rowOf(js, "run").IdleS, rowOf(js2, "run").IdleS; a == nil || b == nil || *b-*a < 1.4 {
		t.Fatalf("idle_s of run %v then %v, 1.5 s later", a, b)
	}
	for i := range first.rows {
		if first.rows[i] != later.rows[i] {
			t.Errorf("row %d was encoded again with nothing but the clock changed", i)
		}
	}
	// The clock alone puts a hours hold on office (stopped).
	wed := now.AddDate(0, 0, (int(time.Wednesday)-int(now.Weekday())+7)%7)
	at := func(h int) time.Time { return time.Date(wed.Year(), wed.Month(), wed.Day(), h, 0, 0, 0, time.Local) }
	_, js = check("in hours", at(10))
	_, js2 = check("out of hours", at(20))
	if h, h2 := rowOf(js, "office").Hold, rowOf(js2, "office").Hold; h != nil || h2 == nil || h2.Reason != api.HoldHours {
		t.Fatalf("office's hold %+v in hours, %+v out of them", h, h2)
	}

	// The next firing moves (as a firing re-arms the schedule) and
	// nothing else does.
	before := inputs("nightly")
	if err := f.c.sched.Reconcile(map[string]string{}); err != nil {
		t.Fatal(err)
	}
	if err := f.c.sched.Reconcile(map[string]string{"nightly": "@every 1h"}); err != nil {
		t.Fatal(err)
	}
	if m := moved(before, inputs("nightly")); m != "next" {
		t.Fatalf("re-arming the schedule moved %q, want next alone", m)
	}
	check("the next firing moved", time.Now())

	f.mustCall(api.OpStop, api.NamesArgs{Name: "stopme"}, nil)
	f.waitStates(map[string]string{"stopme": "stopped"})
	check("a unit stopped", time.Now())

	before = inputs("claude")
	f.mustCall(api.OpSend, api.SendArgs{Name: "claude", Text: "r"}, nil)
	f.waitUntil("claude idle again after its redraw", func() bool {
		a := inputs("claude").act
		return a.State == term.Idle && a != before.act
	})
	if m := moved(before, inputs("claude")); m != "activity" {
		t.Fatalf("a redraw of the same dialog moved %q, want activity alone", m)
	}
	check("output on a screen that stays the same", time.Now())

	before = inputs("claude")
	f.write(toml("one", true))
	f.mustCall(api.OpReload, struct{}{}, nil)
	if m := moved(before, inputs("claude")); m != "mask" {
		t.Fatalf("the secret's reload moved %q of claude, want mask alone", m)
	}
	if _, js = check("the masker learnt a secret", time.Now()); strings.Contains(js, listSecret) || !strings.Contains(js, mask.Masked) {
		t.Fatalf("the secret on the dialog is not masked: %s", js)
	}

	before = inputs("office")
	f.write(toml("two", true))
	f.mustCall(api.OpReload, struct{}{}, nil)
	if m := moved(before, inputs("office")); !strings.Contains(m, "tables") {
		t.Fatalf("the description's reload moved %q of office, not its tables", m)
	}
	if _, js = check("a reload changed a description", time.Now()); rowOf(js, "office").Description != "two" {
		t.Fatalf("office's description after the reload: %s", js)
	}
	// A reload swaps the table before the unit's actor hears of it (and
	// publishes a new status), and every reload loads the masker again:
	// the table alone is that window.
	office, err := f.c.lookup("office")
	if err != nil {
		t.Fatal(err)
	}
	before = inputs("office")
	h := *office.harness()
	h.Description = "three"
	office.setTables(&h, nil)
	if m := moved(before, inputs("office")); m != "tables" {
		t.Fatalf("a new table moved %q of office, want tables alone", m)
	}
	if _, js = check("a new table, its actor not told yet", time.Now()); rowOf(js, "office").Description != "three" {
		t.Fatalf("office's description after its new table: %s", js)
	}

	before = inputs("spinner")
	f.mustCall(api.OpSend, api.SendArgs{Name: "spinner", Text: "y"}, nil)
	waitAgent("spinner", api.AgentReady, api.AgentWorking)
	if m := moved(before, inputs("spinner")); m != "agent" {
		t.Fatalf("the spinner's answer moved %q, want agent alone", m)
	}
	if _, js = check("an agent changed state", time.Now()); rowOf(js, "spinner").AgentState == api.AgentWaiting {
		t.Fatalf("spinner's row after the answer: %s", js)
	}
}

// listing is what the socket frames without a second pass
// (protocol.JSONAppender, which control may not import).
var _ interface{ AppendJSON([]byte) []byte } = listing{}

package proctree

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// An escaped child (new session, no marker) is attributed to its run while
// its parent lives, keeps that attribution once it is orphaned and adopted,
// and is killed when the run is finished.
func TestTracker_OrphanKeepsItsRunAndEndsWithIt(t *testing.T) {
	r := startReaper(t)
	tr := NewTracker(nil, nil, time.Hour)
	main := startHelper(t, r, "spawn", SysProcAttr())
	escaped := main.readPid(t)
	mainPID := main.cmd.Process.Pid
	if err := tr.Register("run-a", mainPID); err != nil {
		t.Fatal(err)
	}
	other := startHelper(t, r, "sleep", SysProcAttr())
	if err := tr.Register("run-b", other.cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	tr.Refresh()
	if got := pids(tr.Members("run-a")); !slices.Equal(got, []int{mainPID, escaped}) && !slices.Equal(got, []int{escaped, mainPID}) {
		t.Fatalf("members of run-a = %v, want main %d and escaped %d", got, mainPID, escaped)
	}
	if st := mustStat(t, escaped); st.sid == mainPID || st.pgid == mainPID {
		t.Fatalf("escaped child %+v shares the main's session or group; the test proves nothing", st)
	}

	// The main process dies: the escaped child is re-parented to us.
	if err := main.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	main.wait(t)
	waitFor(t, 5*time.Second, "adoption", func() bool { return mustStat(t, escaped).ppid == os.Getpid() })
	tr.Refresh()
	if got := pids(tr.Members("run-a")); !slices.Equal(got, []int{escaped}) {
		t.Fatalf("after adoption run-a has %v, want the orphan %d", got, escaped)
	}
	if got := pids(tr.Members("run-b")); !slices.Equal(got, []int{other.cmd.Process.Pid}) {
		t.Fatalf("run-b has %v", got)
	}

	tr.Finish("run-a")
	tr.Refresh()
	waitFor(t, 5*time.Second, "the orphan to be killed", func() bool { return !Alive(escaped) })
	if !Alive(other.cmd.Process.Pid) {
		t.Fatal("finishing run-a killed run-b's process")
	}
	tr.Refresh()
	if got := tr.Members("run-a"); got != nil {
		t.Fatalf("a finished run with nothing left is still tracked: %v", got)
	}
}

// A child orphaned before any pass saw it (its parent exited at once) is
// still attributed while it stays in the main process's session.
func TestTracker_UnseenOrphanInTheSessionBelongsToTheRun(t *testing.T) {
	r := startReaper(t)
	tr := NewTracker(nil, nil, time.Hour)
	// Its middle process starts a sleeper in the same session and exits
	// at once, before any pass.
	main := startHelper(t, r, "session-orphan", SysProcAttr())
	orphan := main.readPid(t)
	oid, err := IdentOf(orphan)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { SignalIdent(oid, syscall.SIGKILL) }) // never a bare pid: it may be reused

	if err := tr.Register("run", main.cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "adoption", func() bool { return mustStat(t, orphan).ppid == os.Getpid() })
	tr.Refresh()
	if got := pids(tr.Members("run")); !slices.Contains(got, orphan) {
		t.Fatalf("members %v lack the orphan %d in the main's session", got, orphan)
	}
	// A stranger in no run's tree or session is never attributed.
	stranger := startHelper(t, r, "sleep", &syscall.SysProcAttr{Setsid: true})
	tr.Refresh()
	if got := pids(tr.Members("run")); slices.Contains(got, stranger.cmd.Process.Pid) {
		t.Fatalf("stranger %d attributed to the run", stranger.cmd.Process.Pid)
	}
}

// The fallback's answer to a SIGKILLed daemon: the tracker records members
// in the ledger; the next start ends the recorded ones, marker or not, with
// their descendants, while a recorded pid that now names another process,
// and an entry of another boot, are left alone.
func TestCleanupLeftovers_EndsRecordedMembersByIdentity(t *testing.T) {
	r := startReaper(t)
	path := filepath.Join(t.TempDir(), "ledger.json")
	l, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTracker(l, nil, time.Hour)
	main := startHelper(t, r, "spawn", SysProcAttr()) // no marker anywhere
	escaped := main.readPid(t)
	marker := NewMarker(inst("ledger"), "u", 1)
	entry, err := NewEntry("u", main.cmd.Process.Pid, marker, inst("ledger"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Add(entry); err != nil {
		t.Fatal(err)
	}
	if err := tr.Register(marker, main.cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	tr.Refresh()
	got := l.Entries()
	if len(got) != 1 || !slices.Contains(pids(got[0].Members), escaped) || got[0].Boot == "" || got[0].Start == 0 {
		t.Fatalf("ledger entry %+v does not record the escaped member %d", got, escaped)
	}

	// Strangers: one whose pid an entry names with another start time
	// (a reused pid), one named exactly but by an entry of another boot.
	reused := startHelper(t, r, "sleep", &syscall.SysProcAttr{Setsid: true})
	rebooted := startHelper(t, r, "sleep", &syscall.SysProcAttr{Setsid: true})
	rid, err := IdentOf(rebooted.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	l.Flush()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f ledgerFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	f.Entries = append(f.Entries,
		LedgerEntry{Unit: "old", PID: reused.cmd.Process.Pid, Start: 1, Boot: f.Entries[0].Boot, Marker: "x:old:1"},
		LedgerEntry{Unit: "gone", PID: rid.PID, Start: rid.Start, Boot: "another-boot", Marker: "y:gone:1", Members: []Ident{rid}})
	if err := writeLedgerFile(path, f, nil); err != nil {
		t.Fatal(err)
	}

	// The crash: the main process dies with the daemon (parent-death
	// signal); the escaped child, without a marker, lives on.
	if err := main.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	main.wait(t)
	if !Alive(escaped) {
		t.Fatal("escaped child died with its parent; the test proves nothing")
	}
	n, err := CleanupLeftovers(path, CleanupOptions{Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || Alive(escaped) {
		t.Fatalf("CleanupLeftovers signalled %d, escaped alive %v; want the escaped member ended", n, Alive(escaped))
	}
	for _, s := range []*helper{reused, rebooted} {
		if !Alive(s.cmd.Process.Pid) {
			t.Fatalf("stranger %d was killed", s.cmd.Process.Pid)
		}
	}
}

// descendantsOf follows parent links from recorded processes to children
// started after the record.
func TestDescendantsOf(t *testing.T) {
	procs := []procInfo{
		{pid: 10, ppid: 1, start: 5, state: 'S'},
		{pid: 11, ppid: 10, start: 6, state: 'S'},
		{pid: 12, ppid: 11, start: 7, state: 'S'},
		{pid: 13, ppid: 11, start: 7, state: 'Z'},
		{pid: 20, ppid: 1, start: 5, state: 'S'},
	}
	got := descendantsOf(procs, map[Ident]bool{{PID: 10, Start: 5}: true})
	if !slices.Equal(pids(got), []int{11, 12}) {
		t.Fatalf("descendants %v, want 11 and 12", got)
	}
	if got := descendantsOf(procs, map[Ident]bool{{PID: 10, Start: 4}: true}); len(got) != 0 {
		t.Fatalf("a reused pid's children counted: %v", got)
	}
}

// At shutdown every process the daemon adopted is ended, whatever its
// session or environment.
func TestEndDescendants_EndsAdoptedOrphans(t *testing.T) {
	r := startReaper(t)
	h := startHelper(t, r, "tree", SysProcAttr(), ignoreTermEnv+"=1")
	orphan := h.readPid(t)
	waitFor(t, 5*time.Second, "adoption", func() bool { return mustStat(t, orphan).ppid == os.Getpid() })
	n, err := EndDescendants(200*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("EndDescendants signalled %d, want the helper and its orphan", n)
	}
	if Alive(orphan) || Alive(h.cmd.Process.Pid) {
		t.Fatal("a descendant survived")
	}
	h.wait(t)
}

func pids(ids []Ident) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = id.PID
	}
	slices.Sort(out)
	return out
}

// A group verified by a marked member stays a target of CleanupLeftovers
// while a member from then is alive; once they are all gone its id may be
// a stranger's (pid_max 32768, and the grace is seconds), whose members
// all started later and are left alone.
func TestHeldGroups_AGroupWhoseVerifiedMembersAreGoneIsNotTargeted(t *testing.T) {
	const g, mark = 500, 1000
	groups := map[int]uint64{g: mark}
	for _, c := range []struct {
		name string
		p    procInfo
		want bool
	}{
		{"a member from before the mark", procInfo{pid: 501, pgid: g, start: mark - 5, state: 'S'}, true},
		{"a member started at the mark's tick", procInfo{pid: 501, pgid: g, start: mark, state: 'S'}, true},
		{"a stranger that took the id later", procInfo{pid: 502, pgid: g, start: mark + 1, state: 'S'}, false},
		{"a zombie from before the mark", procInfo{pid: 503, pgid: g, start: mark - 5, state: 'Z'}, false},
		{"another group", procInfo{pid: 504, pgid: g + 1, start: mark - 5, state: 'S'}, false},
	} {
		if got := heldGroups([]procInfo{c.p}, groups)[g]; got != c.want {
			t.Errorf("%s: held = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestScenario_RunsRegisteredDuringAPassAreTrackedWithoutARace: `start
// --all` registers runs while the tracker's own passes read /proc; a
// daemon once died here of a concurrent map read and write (run this
// package under -race to see one).
func TestScenario_RunsRegisteredDuringAPassAreTrackedWithoutARace(t *testing.T) {
	r := startReaper(t)
	tr := NewTracker(nil, nil, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	tr.Start(ctx)
	defer func() { cancel(); tr.Stop() }()
	const n = 24
	mains := make([]int, n)
	for i := range mains {
		mains[i] = startHelper(t, r, "sleep", SysProcAttr()).cmd.Process.Pid
	}
	passes := make(chan struct{})
	go func() {
		defer close(passes)
		for range 2 * n {
			tr.Refresh()
		}
	}()
	for i, pid := range mains {
		if err := tr.Register(fmt.Sprint("run-", i), pid); err != nil {
			t.Fatal(err)
		}
	}
	<-passes
	tr.Refresh()
	for i, pid := range mains {
		if got := pids(tr.Members(fmt.Sprint("run-", i))); !slices.Equal(got, []int{pid}) {
			t.Errorf("members of run-%d = %v, want its main %d", i, got, pid)
		}
	}
}

// TestScenario_ABurstOfRegistersIsAFewPasses: start --all registers a run
// every millisecond or so, and each Register asks for a pass; a pass
// reads all of /proc, so the tracker makes at most one per passGap, not
// one per Register, and still tracks every run.
func TestScenario_ABurstOfRegistersIsAFewPasses(t *testing.T) {
	r := startReaper(t)
	tr := NewTracker(nil, nil, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	tr.Start(ctx)
	defer func() { cancel(); tr.Stop() }()
	main := startHelper(t, r, "sleep", SysProcAttr()).cmd.Process.Pid
	const n = 200
	start := time.Now()
	for i := range n {
		if err := tr.Register(fmt.Sprint("run-", i), main); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	took := time.Since(start)
	tr.mu.Lock()
	passes := tr.ended
	tr.mu.Unlock()
	if most := uint64(took/passGap) + 2; passes > most || passes > n/10 {
		t.Errorf("%d passes for %d Registers over %v, want at most %d (one per %v)", passes, n, took, min(most, n/10), passGap)
	}
	// Every run shares the one main process (a process belongs to one
	// run): it is a member of exactly one of them.
	tr.Refresh()
	seen := 0
	for i := range n {
		seen += len(tr.Members(fmt.Sprint("run-", i)))
	}
	if seen != 1 {
		t.Errorf("the main process is a member of %d runs, want 1", seen)
	}
	t.Logf("%d passes for %d Registers over %v", passes, n, took)
}

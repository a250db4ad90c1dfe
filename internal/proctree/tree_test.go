package proctree

import (
	"os"
	"syscall"
	"testing"
	"time"
)

func TestKillEndsSetsidGrandchildAndReaperReapsIt(t *testing.T) {
	r := startReaper(t)
	marker := NewMarker(inst("t1"), "tree", 1)
	h := startHelper(t, r, "tree", SysProcAttr(), MarkerEnv(marker))
	pid := h.cmd.Process.Pid
	grand := h.readPid(t)

	// The intermediate exited, so the setsid'd grandchild was adopted by the
	// subreaper (us) and lives in its own session, outside the unit's group.
	g := mustStat(t, grand)
	if g.ppid != os.Getpid() {
		t.Fatalf("grandchild ppid = %d, want the subreaper %d", g.ppid, os.Getpid())
	}
	if g.sid != grand || g.pgid == pid {
		t.Fatalf("grandchild sid %d pgid %d: want its own session, not group %d", g.sid, g.pgid, pid)
	}
	if u := mustStat(t, pid); u.pgid != pid || u.sid != pid {
		t.Fatalf("unit pgid %d sid %d: want both %d (SysProcAttr Setsid)", u.pgid, u.sid, pid)
	}
	found := Find(marker)
	if !contains(found, pid) || !contains(found, grand) {
		t.Fatalf("Find(%q) = %v, want unit %d and grandchild %d", marker, found, pid, grand)
	}

	if n := Kill(pid, marker, 0, syscall.SIGKILL); n < 2 {
		t.Fatalf("Kill signalled %d processes, want at least 2", n)
	}
	ws := h.wait(t)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("unit wait status %v, want killed by SIGKILL", ws)
	}
	waitFor(t, 5*time.Second, "no process carrying the marker", func() bool { return len(Find(marker)) == 0 })
	// The adopted grandchild's zombie is unregistered: the reaper must take it.
	waitFor(t, 5*time.Second, "grandchild reaped", func() bool { return !exists(grand) })
	r.Release(pid)
	waitFor(t, 5*time.Second, "no zombie children", func() bool { return len(ourZombies()) == 0 })
}

func TestKillLeavesUnmarkedStrangersAlone(t *testing.T) {
	r := startReaper(t)
	marker := NewMarker(inst("t2"), "u", 1)
	unit := startHelper(t, r, "spawn", SysProcAttr(), MarkerEnv(marker))
	unitPid := unit.cmd.Process.Pid
	sleeper := unit.readPid(t)
	stranger := startHelper(t, r, "sleep", SysProcAttr(), MarkerEnv(NewMarker(inst("t2"), "u", 10)))
	if _, err := stranger.out.ReadString('\n'); err != nil {
		t.Fatalf("stranger not ready: %v", err)
	}
	// The stranger's marker extends ours ("…:1" vs "…:10"): exact matching
	// must tell them apart.
	if got := Find(marker); len(got) != 2 || !contains(got, unitPid) || !contains(got, sleeper) {
		t.Fatalf("Find(%q) = %v, want exactly [%d %d]", marker, got, unitPid, sleeper)
	}
	if got := FindPrefix(InstancePrefix(inst("t2"))); len(got) != 3 {
		t.Fatalf("FindPrefix(instance) = %v, want 3 processes", got)
	}
	if got := FindPrefix(InstancePrefix(inst("t"))); len(got) != 0 {
		t.Fatalf("FindPrefix of instance %q matched %v; the separator must stop it", inst("t"), got)
	}
	if got := FindPrefix(""); got != nil {
		t.Fatalf("FindPrefix(\"\") = %v, want nothing", got)
	}

	Kill(unitPid, marker, 0, syscall.SIGTERM)
	if ws := unit.wait(t); !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("unit wait status %v, want SIGTERM", ws)
	}
	waitFor(t, 5*time.Second, "sleeper gone", func() bool { return !Alive(sleeper) })
	if !Alive(stranger.cmd.Process.Pid) {
		t.Fatalf("Kill ended process %d that carries a different marker", stranger.cmd.Process.Pid)
	}
}

func TestPdeathsigKillsChildWhenParentDies(t *testing.T) {
	r := startReaper(t)
	a := startHelper(t, r, "pdeath", SysProcAttr())
	b := a.readPid(t)
	if !Alive(b) {
		t.Fatalf("child B %d not alive before its parent died", b)
	}
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill A: %v", err)
	}
	a.wait(t)
	waitFor(t, 5*time.Second, "B killed by its parent-death signal", func() bool { return !Alive(b) })
}

func TestAlive(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Fatal("Alive(self) = false")
	}
	if Alive(0) || Alive(-1) {
		t.Fatal("Alive of a non-pid = true")
	}
	r := startReaper(t)
	h := startHelper(t, r, "exit", nil, exitCodeEnv+"=0")
	pid := h.cmd.Process.Pid
	// A registered child that exited stays a zombie until its Wait: not alive.
	waitFor(t, 5*time.Second, "exited child becomes a zombie", func() bool {
		st, err := readStat(pid)
		return err == nil && st.state == 'Z'
	})
	if Alive(pid) {
		t.Fatalf("Alive(zombie %d) = true", pid)
	}
	h.wait(t)
}

// After its main process was reaped, a unit's group and session are still
// its own while a member from before the reap is alive (the id stays in
// use), even with no marker: Kill ends them. WaitExit and StartMark are
// how a caller gets the mark between the exit and the reap.
func TestScenario_KillEndsUnmarkedLeftoversOfAReapedMain(t *testing.T) {
	r := startReaper(t)
	marker := NewMarker(inst("reaped"), "u", 1)
	main := startHelper(t, r, "middle", SysProcAttr()) // no marker: as after env -i
	pid := main.cmd.Process.Pid
	member := main.readPid(t)
	if err := WaitExit(pid); err != nil {
		t.Fatal(err)
	}
	if st := mustStat(t, pid); st.state != 'Z' {
		t.Fatalf("after WaitExit the main process is in state %c, want a zombie (not reaped)", st.state)
	}
	exited := StartMark()
	main.wait(t)
	if n := Kill(pid, marker, exited, syscall.SIGKILL); n != 1 {
		t.Fatalf("Kill signalled %d processes, want the one left in the group", n)
	}
	waitFor(t, 5*time.Second, "the leftover gone", func() bool { return !Alive(member) })
}

// A stale pid: the unit's main process was reaped long ago and its id
// taken by a stranger who led a group and session and exited, leaving a
// member. That group looks like the unit's leftovers (no leader, no
// marker), but its members all started after the unit's exit: Kill must
// leave it alone. (Once a CI failure: a HUP-ignoring
// member of a hostile unit's group died while its setsid sibling lived.)
func TestScenario_KillWithAStalePidSparesTheGroupThatTookTheNumber(t *testing.T) {
	r := startReaper(t)
	marker := NewMarker(inst("stale"), "u", 1)
	exited := StartMark() // the unit's main process exited and was reaped by now
	stranger := startHelper(t, r, "middle", SysProcAttr())
	sid := stranger.cmd.Process.Pid
	member := stranger.readPid(t)
	stranger.wait(t)
	id, err := IdentOf(member)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := SignalIdent(id, syscall.SIGKILL); err != nil {
			t.Error(err)
		}
		waitFor(t, 5*time.Second, "the stranger's member reaped", func() bool { return !exists(member) })
	})
	if st := mustStat(t, member); st.pgid != sid || st.sid != sid {
		t.Fatalf("member pgid %d sid %d, want both %d: the test proves nothing", st.pgid, st.sid, sid)
	}
	if n := Kill(sid, marker, exited, syscall.SIGKILL); n != 0 {
		t.Errorf("Kill with the stale pid %d signalled %d processes", sid, n)
	}
	if !LiveIdent(id) {
		t.Fatalf("the stranger's member %d was killed through the stale pid", member)
	}
}

package proctree

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestLedgerPersistsAtomically(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "ledger.json")
	l, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	a := LedgerEntry{Unit: "a", PID: 10, PGID: 10, SID: 10, Marker: "i:a:1", Instance: "i"}
	b := LedgerEntry{Unit: "b", PID: 11, PGID: 11, SID: 11, Marker: "i:b:1", Instance: "i"}
	for _, step := range []func() error{
		func() error { return l.AddInstance("i") },
		func() error { return l.Add(a) },
		func() error { return l.Add(b) },
		func() error { a.PID = 12; return l.Add(a) }, // same marker: replaces
		func() error { return l.Remove("i:b:1") },
		func() error { return l.Remove("absent") },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	l.Flush()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("ledger mode %v, want 0600", fi.Mode().Perm())
	}
	if ents, err := os.ReadDir(filepath.Dir(path)); err != nil || len(ents) != 1 {
		t.Fatalf("state dir holds %v (%v), want only the ledger: temp files must not stay", ents, err)
	}

	again, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	got := again.Entries()
	if len(got) != 1 || got[0].Marker != "i:a:1" || got[0].PID != 12 {
		t.Fatalf("reopened entries %+v, want only a with pid 12", got)
	}
	if err := again.Clear(); err != nil {
		t.Fatal(err)
	}
	var f ledgerFile
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &f); err != nil || len(f.Entries) != 0 || len(f.Instances) != 0 {
		t.Fatalf("after Clear the file is %s (%v)", raw, err)
	}
}

func TestCorruptLedgerIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.json")
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLedger(path); err == nil {
		t.Fatal("OpenLedger of a corrupt file succeeded")
	}
	if _, err := CleanupLeftovers(path, CleanupOptions{Grace: time.Second}); err == nil {
		t.Fatal("CleanupLeftovers of a corrupt file succeeded")
	}
	if raw, err := os.ReadFile(path); err != nil || string(raw) != "{not json" {
		t.Fatalf("corrupt ledger was changed to %q (%v); keep it for inspection", raw, err)
	}
}

func TestCleanupLeftoversWithoutLedger(t *testing.T) {
	n, err := CleanupLeftovers(filepath.Join(t.TempDir(), "none.json"), CleanupOptions{Grace: time.Second})
	if n != 0 || err != nil {
		t.Fatalf("CleanupLeftovers of a missing ledger = %d, %v", n, err)
	}
}

// A "crashed" daemon left two units, each with a setsid'd sleeper that
// escaped its group; one unit is only covered by its instance record and
// ignores SIGTERM. A stranger whose pid a stale entry names must survive.
func TestCleanupLeftoversEndsEscapedTrees(t *testing.T) {
	r := startReaper(t)
	path := filepath.Join(t.TempDir(), "ledger.json")
	inst := inst("crashed")
	l, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.AddInstance(inst); err != nil {
		t.Fatal(err)
	}

	mA := NewMarker(inst, "a", 1)
	unitA := startHelper(t, r, "spawn", SysProcAttr(), MarkerEnv(mA))
	sleeperA := unitA.readPid(t)
	entry, err := NewEntry("a", unitA.cmd.Process.Pid, mA, inst)
	if err != nil {
		t.Fatal(err)
	}
	if pid := unitA.cmd.Process.Pid; entry.PGID != pid || entry.SID != pid {
		t.Fatalf("entry %+v: want pgid and sid %d", entry, pid)
	}
	if err := l.Add(entry); err != nil {
		t.Fatal(err)
	}

	// Unit b never got its own entry (crash right after spawn): only the
	// instance record leads to it.
	mB := NewMarker(inst, "b", 1)
	unitB := startHelper(t, r, "spawn", SysProcAttr(), MarkerEnv(mB), ignoreTermEnv+"=1")
	sleeperB := unitB.readPid(t)

	// The stranger reused a recorded pid and leads its own group, but
	// carries no marker.
	stranger := startHelper(t, r, "sleep", &syscall.SysProcAttr{Setsid: true})
	if _, err := stranger.out.ReadString('\n'); err != nil {
		t.Fatalf("stranger not ready: %v", err)
	}
	sp := stranger.cmd.Process.Pid
	if err := l.Add(LedgerEntry{Unit: "gone", PID: sp, PGID: sp, SID: sp,
		Marker: NewMarker(inst+"-older", "gone", 3), Instance: inst + "-older"}); err != nil {
		t.Fatal(err)
	}
	// The crash: the ledger and handles are dropped, nothing is killed.
	l.Flush()

	killed, err := CleanupLeftovers(path, CleanupOptions{Logger: slog.Default(), Grace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if killed != 4 {
		t.Fatalf("CleanupLeftovers signalled %d processes, want 4 (two units, two sleepers)", killed)
	}
	for _, pid := range []int{sleeperA, sleeperB} {
		if Alive(pid) {
			t.Fatalf("escaped sleeper %d survived cleanup", pid)
		}
	}
	if got := FindPrefix(InstancePrefix(inst)); len(got) != 0 {
		t.Fatalf("processes %v still carry a marker of the crashed instance", got)
	}
	if ws := unitA.wait(t); ws.Signal() != syscall.SIGTERM {
		t.Fatalf("unit a status %v, want ended by SIGTERM", ws)
	}
	if ws := unitB.wait(t); ws.Signal() != syscall.SIGKILL {
		t.Fatalf("unit b status %v, want SIGKILL after the grace period", ws)
	}
	if !Alive(sp) {
		t.Fatalf("stranger %d without the marker was killed", sp)
	}
	again, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Entries(); len(got) != 0 {
		t.Fatalf("ledger not truncated: %+v", got)
	}
}

//go:build e2e

package e2e

// The full state dir needs a tmpfs mounted by the test (Linux only).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/fleettest"
)

// stateWritesInfo is daemon-info's "state_writes".
type stateWritesInfo struct {
	Failures int `json:"failures"`
	Failing  []struct {
		File  string `json:"file"`
		Error string `json:"error"`
	} `json:"failing"`
}

func (f *fleet) stateWrites() stateWritesInfo {
	f.T.Helper()
	var info struct {
		StateWrites stateWritesInfo `json:"state_writes"`
	}
	f.MustJSON(&info, "daemon-info")
	return info.StateWrites
}

// fill writes a file into dir until the file system is full.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	fl, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := fl.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			break
		}
	}
	for _, n := range []int{512, 64, 1} { // the last blocks too
		for {
			if _, err := fl.Write(buf[:n]); err != nil {
				break
			}
		}
	}
	return path
}

// runIDs are the ids of the runs `harness runs NAME --json` lists.
func (f *fleet) runIDs(name string) []uint64 {
	f.T.Helper()
	var rs []struct {
		ID uint64 `json:"id"`
	}
	f.MustJSON(&rs, "runs", name)
	var ids []uint64
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	return ids
}

// TestScenario_AFullStateDirStopsNothing: with the state dir on a small
// tmpfs filled to the last byte, in both ownership modes, units start,
// stop and restart and list answers; daemon-info says which file cannot be
// written; a daemon started on the full dir serves too; once there is room
// again every run the daemon acknowledged is in the history file. A daemon
// SIGKILLed while the disk is full leaves no unit process behind once the
// next daemon starts, still on the full dir.
func TestScenario_AFullStateDirStopsNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("mounting a tmpfs needs root (CI runs the suite as root)")
	}
	for _, mode := range []struct {
		name string
		args []string
	}{{"fallback", []string{"--cgroup=off"}}, {"cgroup", nil}} {
		t.Run(mode.name, func(t *testing.T) {
			dir := t.TempDir()
			f := &fleet{Fleet: fleettest.NewFleet(t, harnessBin, dir, daemonEnv()), args: mode.args}
			if err := os.Mkdir(f.State, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mount("tmpfs", f.State, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
				t.Fatalf("mount a tmpfs: %v", err)
			}
			t.Cleanup(func() { // after the daemon stopped (cleanups run last first)
				if err := syscall.Unmount(f.State, syscall.MNT_DETACH); err != nil {
					t.Errorf("unmount %s: %v", f.State, err)
				}
			})
			var cfg strings.Builder
			for _, n := range []string{"a", "b"} {
				fmt.Fprintf(&cfg, "[harness.%s]\ncmd = \"sh\"\nargs = [\"-c\", \"echo up; exec sleep 100000\"]\nstop_grace = 2\n", n)
			}
			f.WriteConfig(cfg.String())
			f.start()
			t.Cleanup(f.checkCgroupGone)
			t.Cleanup(f.Stop)

			f.MustRun("start", "a")
			f.waitState("a", "running")
			filler := fill(t, f.State)

			// Full: every verb works.
			f.MustRun("stop", "a")
			f.waitState("a", "stopped")
			f.MustRun("start", "a", "b")
			f.waitState("a", "running")
			f.waitState("b", "running")
			f.MustRun("list")
			// Appends fit while the history file's last page has room:
			// restart b until the history cannot be written.
			failing := func(file string) bool {
				for _, e := range f.stateWrites().Failing {
					if e.File == file && strings.Contains(e.Error, "no space left") {
						return true
					}
				}
				return false
			}
			for i := 0; !failing("runs.jsonl"); i++ {
				if i == 40 {
					t.Fatalf("40 restarts and daemon-info does not say the history cannot be written: %+v", f.stateWrites())
				}
				n := len(f.runIDs("b"))
				f.MustRun("restart", "b")
				f.WaitFor("b's next run", 20*time.Second, func() bool { return len(f.runIDs("b")) == n+1 && f.unit("b").State == "running" })
			}
			if mode.name == "fallback" && !failing("processes.json") {
				t.Errorf("daemon-info does not say the ledger cannot be written: %+v", f.stateWrites())
			}
			if w := f.stateWrites(); w.Failures == 0 {
				t.Errorf("daemon-info counts no failure: %+v", w)
			}
			acked := map[string][]uint64{"a": f.runIDs("a"), "b": f.runIDs("b")}
			if len(acked["a"]) != 2 || len(acked["b"]) < 1 {
				t.Fatalf("runs while full: %v", acked)
			}
			pids := []int{f.unit("a").PID, f.unit("b").PID}

			if mode.name == "fallback" {
				// A crash while full, and the next daemon started while
				// still full: it ends what the last one left and serves.
				f.kill()
				f.start()
				for _, pid := range pids {
					waitGone(t, "a unit process of the crashed daemon", pid)
				}
				f.MustRun("start", "a")
				f.waitState("a", "running")
				if err := os.Remove(filler); err != nil {
					t.Fatal(err)
				}
				f.MustRun("stop", "a")
				f.WaitFor("the state files to be written again", 40*time.Second, func() bool { return len(f.stateWrites().Failing) == 0 })
				return
			}
			// A daemon started on the full state dir serves and starts units.
			f.Stop()
			f.start()
			f.MustRun("start", "a", "b")
			f.waitState("a", "running")
			f.waitState("b", "running")
			acked = map[string][]uint64{"a": f.runIDs("a"), "b": f.runIDs("b")}
			// Room again: the writers catch up, nothing acknowledged is lost.
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			f.MustRun("stop", "b") // a change wakes the writer at once
			f.WaitFor("the state files to be written again", 40*time.Second, func() bool { return len(f.stateWrites().Failing) == 0 })
			data, err := os.ReadFile(filepath.Join(f.State, "runs.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			for name, ids := range acked {
				for _, id := range ids {
					if !strings.Contains(string(data), fmt.Sprintf(`"id":%d,"harness":%q`, id, name)) {
						t.Errorf("run %d of %s is not in runs.jsonl:\n%s", id, name, data)
					}
				}
			}
		})
	}
}

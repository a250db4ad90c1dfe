package supervise

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/cgroup"
	"github.com/harness-dev/harness/internal/proctree"
)

// testCgroups makes a cgroup subtree for one test and ends it afterwards.
// The tests run as root on a cgroup v2 kernel (CI does).
func testCgroups(t *testing.T) *cgroup.Tree {
	t.Helper()
	loc, err := cgroup.Locate()
	if err != nil {
		t.Fatalf("cgroup mode needs a cgroup v2 hierarchy: %v", err)
	}
	var b [6]byte
	rand.Read(b[:])
	tr, err := cgroup.Create(loc, "harness-test-"+hex.EncodeToString(b[:]))
	if err != nil {
		t.Fatalf("cgroup mode needs a writable cgroup v2 hierarchy: %v", err)
	}
	t.Cleanup(func() {
		if _, err := cgroup.End(tr.Dir(), time.Second); err != nil {
			t.Errorf("end test cgroups: %v", err)
		}
		if err := tr.Close(); err != nil {
			t.Errorf("close test cgroups: %v", err)
		}
	})
	return tr
}

func readPidFile(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// Never kill a bare pid later: by then it may be someone else's.
	if id, err := proctree.IdentOf(pid); err == nil {
		t.Cleanup(func() { proctree.SignalIdent(id, syscall.SIGKILL) })
	}
	return pid
}

// A child in a new session, without environment, ignoring SIGTERM and
// SIGHUP: in cgroup mode stop ends it (cgroup.kill after the grace) before
// it reports stopped; in fallback mode the tracker does.
func TestStopEndsAnEnvlessSetsidChildThatIgnoresSIGTERM(t *testing.T) {
	for _, mode := range []string{"cgroup", "tracker"} {
		t.Run(mode, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "pid")
			cfg := helperCfg("hostile", "envless", map[string]string{"HELPER_OUT": out})
			cfg.StopGrace = 300 * time.Millisecond
			e := newEnv(t, cfg, func(d *Deps) {
				if mode == "cgroup" {
					d.Cgroups = testCgroups(t)
				} else {
					d.Tracker = proctree.NewTracker(nil, nil, time.Hour)
				}
			})
			e.start()
			e.waitLog("ready")
			child := readPidFile(t, out)
			e.stop()
			if st := e.u.Status(); st.State != StateStopped {
				t.Fatalf("after stop: %+v", st)
			}
			if proctree.Alive(child) {
				t.Fatalf("child %d outlived the stop", child)
			}
		})
	}
}

// In cgroup mode the run goes on after its main process exited, while a
// process of it lives, and its exit is reported when that one is gone.
func TestCgroupMode_RunEndsWithItsLastProcess(t *testing.T) {
	out := filepath.Join(t.TempDir(), "pid")
	cfg := helperCfg("daemonising", "envless", map[string]string{"HELPER_OUT": out, "HELPER_EXIT": "1"})
	e := newEnv(t, cfg, func(d *Deps) { d.Cgroups = testCgroups(t) })
	e.start()
	e.waitLog("the run goes on")
	child := readPidFile(t, out)
	st := e.u.Status()
	if st.State != StateRunning || st.PID != 0 {
		t.Fatalf("main process gone, child alive: %+v; want running with pid 0", st)
	}
	for _, ev := range e.rec.all() {
		if ev.Kind == EventExit {
			t.Fatalf("exit reported while the run has a process: %+v", ev)
		}
	}
	id, err := proctree.IdentOf(child)
	if err != nil {
		t.Fatal(err)
	}
	if sent, err := proctree.SignalIdent(id, syscall.SIGKILL); !sent || err != nil {
		t.Fatalf("kill child %d: %v %v", child, sent, err)
	}
	e.waitState(StateStopped)
	st = e.u.Status()
	if st.LastExitCode == nil || *st.LastExitCode != 0 {
		t.Fatalf("after the last process: %+v, want the main process's exit code 0", st)
	}
}

// An upstream-like unit that is told its run never became ready is ended
// and fails as a failed start.
func TestStartedFailureEndsTheRunAsAFailedStart(t *testing.T) {
	cfg := helperCfg("up", "ignore-term", nil)
	cfg.StopGrace = 300 * time.Millisecond
	e := newEnv(t, cfg, func(d *Deps) { d.AwaitReady = true })
	e.start()
	e.waitLog("ready")
	run := e.u.Status().RunID
	e.u.Started(run+1, errors.New("stale report")) // another run: ignored
	e.u.Started(run, errors.New("initialize: context deadline exceeded"))
	e.waitState(StateFailed)
	st := e.u.Status()
	if !strings.Contains(st.LastError, "initialize") || st.Enabled {
		t.Fatalf("after a failed start: %+v", st)
	}
	if !e.logHas("start failed: initialize") || !e.logHas("never became ready") {
		t.Fatal("the log does not say the start failed")
	}
	// An explicit start clears the failure.
	if err := e.u.Start(context.Background(), "manual"); err != nil {
		t.Fatal(err)
	}
	if st := e.u.Status(); st.State != StateRunning || st.RunID == run {
		t.Fatalf("explicit start after the failure: %+v", st)
	}
}

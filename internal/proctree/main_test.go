package proctree

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-dev/harness/internal/proctest"
)

// Helper processes are this test binary re-executed; these variables select
// what it does instead of running tests.
// The shared ones are proctest's.
const (
	helperEnv     = proctest.ModeEnv
	ignoreTermEnv = proctest.IgnoreTermEnv     // "1": ignore SIGTERM
	exitCodeEnv   = proctest.ExitCodeEnv       // for mode "exit"
	spawnExitEnv  = "PROCTREE_TEST_SPAWN_EXIT" // "1": mode "spawn" exits after reporting
)

// testInst makes the markers of this test binary unique: markers are
// matched machine-wide, and another copy of these tests may run beside
// this one (CI runs one, a shared machine may run several).
var testInst = func() string {
	id, err := NewInstanceID()
	if err != nil {
		panic(err)
	}
	return "t" + id
}()

// inst is an instance id for a test: unique to this binary.
func inst(name string) string { return testInst + "-" + name }

func TestMain(m *testing.M) {
	proctest.Main(runHelper) // returns unless this process is a helper
	// Orphans of the helpers must re-parent to the test process, as they
	// would to the daemon.
	if err := BecomeSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, "become subreaper:", err)
		os.Exit(2)
	}
	goleak.VerifyTestMain(m)
}

// runHelper is the body of a helper process in this package's own modes
// (proctest.Main runs the shared ones: sleep, exit, stubborn, escape):
//
//	spawn   start a setsid'd "sleep" (no parent-death signal), print its pid,
//	        then sleep, or exit if $PROCTREE_TEST_SPAWN_EXIT=1
//	tree    run "spawn" with SPAWN_EXIT=1 (so its sleeper re-parents), print
//	        the sleeper's pid, sleep
//	pdeath  start "sleep" with SysProcAttr(), print its pid, sleep
//	orphan  start a setsid'd "exit" and exit at once without waiting
//	session-orphan  run "middle" (which starts a "sleep" in this session and
//	        exits), print the sleeper's pid, sleep
func runHelper(mode string) (code int, ok bool) {
	switch mode {
	case "spawn":
		pid, err := helperStartSleeper(&syscall.SysProcAttr{Setsid: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, "spawn:", err)
			return 101, true
		}
		fmt.Println(pid)
		if os.Getenv(spawnExitEnv) == "1" {
			return 0, true
		}
		time.Sleep(time.Hour)
	case "tree":
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"=spawn", spawnExitEnv+"=1")
		out, err := cmd.Output()
		if err != nil {
			fmt.Fprintln(os.Stderr, "tree:", err)
			return 102, true
		}
		fmt.Print(string(out))
		time.Sleep(time.Hour)
	case "pdeath":
		pid, err := helperStartSleeper(SysProcAttr())
		if err != nil {
			fmt.Fprintln(os.Stderr, "pdeath:", err)
			return 103, true
		}
		fmt.Println(pid)
		time.Sleep(time.Hour)
	case "orphan":
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"=exit", exitCodeEnv+"=0")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "orphan:", err)
			return 104, true
		}
	case "middle":
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"=sleep")
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "middle:", err)
			return 106, true
		}
		fmt.Println(cmd.Process.Pid)
	case "session-orphan":
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"=middle")
		out, err := cmd.Output()
		if err != nil {
			fmt.Fprintln(os.Stderr, "session-orphan:", err)
			return 107, true
		}
		fmt.Print(string(out))
		time.Sleep(time.Hour)
	default:
		return 0, false
	}
	return 0, true
}

// helperStartSleeper starts a "sleep" helper with attr (inheriting this
// environment, marker included), waits for its "ready" and returns its pid.
func helperStartSleeper(attr *syscall.SysProcAttr) (int, error) {
	cmd := proctest.Command("sleep")
	cmd.SysProcAttr = attr
	return proctest.StartReady(cmd)
}

// helper is a started helper process with its stdout.
type helper struct {
	cmd *exec.Cmd
	out *bufio.Reader
}

// spawnHelper starts a helper through r.Spawn; env adds to this process's
// environment. It is safe to call from any goroutine.
func spawnHelper(r *Reaper, mode string, attr *syscall.SysProcAttr, env ...string) (*helper, error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), helperEnv+"="+mode), env...)
	cmd.SysProcAttr = attr
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	if _, err := r.Spawn(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	}); err != nil {
		return nil, fmt.Errorf("start helper %s: %w", mode, err)
	}
	return &helper{cmd: cmd, out: bufio.NewReader(out)}, nil
}

// startHelper is spawnHelper for the test goroutine; the test's cleanup
// kills and waits the helper if it still runs.
func startHelper(t *testing.T, r *Reaper, mode string, attr *syscall.SysProcAttr, env ...string) *helper {
	t.Helper()
	h, err := spawnHelper(r, mode, attr, env...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			if err := h.cmd.Process.Kill(); err != nil {
				t.Logf("kill helper %d: %v", h.cmd.Process.Pid, err)
			}
			h.wait(t)
		}
		r.Release(h.cmd.Process.Pid)
	})
	return h
}

// wait waits for the helper and returns its wait status. An exit status
// is not an error here; failing to wait at all (ECHILD) is.
func (h *helper) wait(t *testing.T) syscall.WaitStatus {
	t.Helper()
	err := h.cmd.Wait()
	if h.cmd.ProcessState == nil {
		t.Errorf("wait helper %d: %v", h.cmd.Process.Pid, err)
		return 0
	}
	return h.cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// readPid reads one line holding a pid.
func (h *helper) readPid(t *testing.T) int {
	t.Helper()
	line, err := h.out.ReadString('\n')
	if err != nil {
		t.Fatalf("read pid from helper: %q: %v", line, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("helper printed %q: %v", line, err)
	}
	return pid
}

// startReaper runs a Reaper for the test's duration.
func startReaper(t *testing.T) *Reaper {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := NewReaper(nil)
	r.Start(ctx)
	t.Cleanup(func() {
		r.Stop()
		cancel()
	})
	return r
}

// waitFor polls cond until it holds or d passes: the conditions are about
// processes this test does not parent, so /proc is the only event source.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ourZombies lists zombie children of the test process.
func ourZombies() []int {
	var z []int
	for _, p := range scan(nil) {
		if p.ppid == os.Getpid() && p.state == 'Z' {
			z = append(z, p.pid)
		}
	}
	return z
}

// exists reports whether /proc still has pid in any state (zombie too).
func exists(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

func mustStat(t *testing.T, pid int) procInfo {
	t.Helper()
	st, err := readStat(pid)
	if err != nil {
		t.Fatalf("stat %d: %v", pid, err)
	}
	return st
}

func contains(pids []int, pid int) bool { return slices.Contains(pids, pid) }

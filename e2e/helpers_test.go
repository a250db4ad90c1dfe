//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/cgroup"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/fleettest"
	"github.com/harness-dev/harness/internal/proctest"
)

// harnessBin is the binary built once by TestMain; the end-to-end tests
// drive it exactly as a user would.
var harnessBin string

// buildTags are the build tags of harnessBin: "tailnet" when the tests
// run with that tag (tailnet_test.go), so the binary has its node.
var buildTags string

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode)) // a harness of some test: this binary re-executed
	}
	// The matrix of `harness mcp`'s two modes, without running the suite
	// twice: this tier runs the byte pipe, the interop tier (real MCP
	// clients and agents) the hand-off users get by default, and the
	// tests whose behaviour differs by mode loop over bridgeModes.
	if _, set := os.LookupEnv(client.HandoffEnv); !set {
		os.Setenv(client.HandoffEnv, "0")
	}
	dir, err := os.MkdirTemp("", "harness-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	harnessBin = filepath.Join(dir, "harness")
	build := exec.Command("go", "build", "-tags", buildTags, "-o", harnessBin, "../cmd/harness")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build harness:", err)
		os.Exit(1)
	}
	code := m.Run()
	// Every daemon and upstream the tests started runs this binary: none
	// may outlive the tests.
	if left := procsOf(harnessBin); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: processes of %s still running after the tests: %v\n", harnessBin, left)
		code = 1
	}
	if left := childrenLeft(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: test children still running after the tests: %v\n", left)
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// procsOf lists live pids whose argv[0] is bin, waiting briefly for ones
// that are on their way out.
func procsOf(bin string) []int {
	return procsLeft(func(pid int) bool {
		argv := proctest.Argv(pid)
		return len(argv) > 0 && argv[0] == bin
	})
}

// procsLeft lists live pids (this process aside) that match, waiting up
// to 5 s for them to go.
func procsLeft(match func(pid int) bool) []int {
	var left []int
	for range 100 {
		left = proctest.Find(func(pid int, _ []string) bool { return match(pid) })
		if len(left) == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return left
}

// fleet is one real daemon on temp dirs (fleettest.Fleet, shared with
// interop: files, start, stop, log and the CLI verbs).
type fleet struct {
	*fleettest.Fleet
	// args are extra `harness daemon` flags (--cgroup=off).
	args []string
	// ownership is what daemon-info said at the last start.
	ownership ownershipInfo
	// killed: the last daemon was SIGKILLed and not started again, so it
	// could not remove its cgroup (the next start would).
	killed bool
}

// kill SIGKILLs the daemon and waits for it to be gone, as a crash would
// end it.
func (f *fleet) kill() {
	f.T.Helper()
	if err := f.Cmd.Process.Kill(); err != nil {
		f.T.Fatal(err)
	}
	<-f.Exited
	f.killed = true
}

// ownershipInfo is daemon-info's "ownership".
type ownershipInfo struct {
	Mode   string `json:"mode"`
	Reason string `json:"reason"`
	Cgroup string `json:"cgroup"`
}

// newFleet writes config and starts `harness daemon` on it, returning once
// the socket answers.
func newFleet(t *testing.T, config string) *fleet {
	t.Helper()
	return newFleetArgs(t, config)
}

// newFleetArgs is newFleet with extra daemon flags.
func newFleetArgs(t *testing.T, config string, args ...string) *fleet {
	t.Helper()
	dir := t.TempDir()
	f := &fleet{Fleet: fleettest.NewFleet(t, harnessBin, dir, daemonEnv()), args: args}
	f.WriteConfig(config)
	f.start()
	t.Cleanup(f.checkCgroupGone) // runs after stop: cleanups run last-in first-out
	t.Cleanup(f.Stop)
	return f
}

// start launches the daemon and waits until it serves.
func (f *fleet) start() {
	f.T.Helper()
	f.killed = false
	f.Start(func() bool {
		out, _, code := f.Run("daemon-info", "--json")
		if code != 0 {
			return false
		}
		var info struct {
			Ownership ownershipInfo `json:"ownership"`
		}
		if err := json.Unmarshal([]byte(out), &info); err != nil {
			f.T.Fatalf("daemon-info --json: %v: %s", err, out)
		}
		f.ownership = info.Ownership
		return true
	}, f.args...)
}

// daemonCmd is the command of another daemon on this fleet's files (one
// that must be refused).
func (f *fleet) daemonCmd() *exec.Cmd {
	c := exec.Command(harnessBin, append([]string{"daemon", "--config", f.Config, "--socket", f.Socket,
		"--state-dir", f.State, "--log-file", f.LogPath}, f.args...)...)
	c.Env = daemonEnv()
	// A test binary that dies (a timeout panic) takes it along.
	c.SysProcAttr = withParentDeath(&syscall.SysProcAttr{})
	return c
}

// daemonEnv is the environment of a test's daemon and CLI: no ambient
// daemon socket or token may leak in from the developer's shell.
func daemonEnv() []string {
	return append(os.Environ(), "HARNESS_SOCKET=", "HARNESS_MCP_TOKEN=")
}

// unitInfo is the shape of one `list --json` row.
type unitInfo struct {
	Name         string `json:"name"`
	State        string `json:"state"`
	Enabled      bool   `json:"enabled"`
	PID          int    `json:"pid"`
	RestartCount int    `json:"restart_count"`
	LastExitCode *int   `json:"last_exit_code"`
	Description  string `json:"description"`
}

func (f *fleet) unit(name string) unitInfo {
	f.T.Helper()
	var us []unitInfo
	f.MustJSON(&us, "list")
	for _, u := range us {
		if u.Name == name {
			return u
		}
	}
	f.T.Fatalf("no unit %q in list", name)
	return unitInfo{}
}

func (f *fleet) waitState(name, state string) unitInfo {
	f.T.Helper()
	var u unitInfo
	f.WaitFor(name+" to be "+state, 20*time.Second, func() bool {
		u = f.unit(name)
		return u.State == state
	})
	return u
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool { return proctest.Alive(pid) }

// readPID waits for a pid file written by a child and returns its pid.
func readPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitGone(t *testing.T, what string, pid int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still running", what, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkCgroupGone runs after the daemon stopped: its cgroup subtree must be
// gone. One that is left (a daemon SIGKILLed and never restarted) is ended
// and removed here, so no test leaves cgroups behind, and reported.
func (f *fleet) checkCgroupGone() {
	dir := f.ownership.Cgroup
	if dir == "" {
		return
	}
	if _, err := os.Stat(dir); err != nil {
		return
	}
	select {
	case <-f.Exited:
	default:
		return // still running: stop did not get it down, and says so
	}
	n, err := cgroup.End(dir, time.Second)
	if f.killed && n == 0 && err == nil {
		return // a killed daemon cannot remove its cgroup; its next start would
	}
	f.T.Errorf("daemon left its cgroup %s (%d processes in it, removal: %v)", dir, n, err)
}

// demoHarness is a [harness.demo] table: the demo agent (quick steps)
// working in work, started with the daemon, typing prompt at its first
// ready when prompt is not "".
func demoHarness(work, prompt string) string {
	s := fmt.Sprintf(`
[harness.demo]
cmd = %q
args = ["demo-agent", "--step", "200ms"]
agent = "demo"
workdir = %q
`, harnessBin, work)
	if prompt != "" {
		s += fmt.Sprintf("prompt = %q\n", prompt)
	}
	return s + "enabled = true\n"
}

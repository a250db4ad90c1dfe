// Package proctest is the test kit of the packages that start real
// processes (proctree, cgroup, supervise): one set of hostile helper
// children, run by re-executing the test binary in a mode. It is imported
// by tests only.
//
//	func TestMain(m *testing.M) {
//		proctest.Main(ownModes) // returns unless this process is a helper
//		goleak.VerifyTestMain(m)
//	}
package proctest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The variables a helper reads.
const (
	// ModeEnv names the mode the re-executed test binary runs instead of
	// its tests.
	ModeEnv = "PROCTEST_MODE"
	// IgnoreTermEnv "1" makes a helper of any mode ignore SIGTERM.
	IgnoreTermEnv = "PROCTEST_IGNORE_TERM"
	// ExitCodeEnv is the status of mode "exit".
	ExitCodeEnv = "PROCTEST_EXIT_CODE"
)

// Main runs the helper mode $ModeEnv names and exits, or returns at once
// when it names none (this process runs the tests). own, when set, is
// asked first, so a package adds modes or replaces shared ones; it says
// ok false for a mode it does not know. The shared modes:
//
//	sleep     print "ready", sleep an hour
//	stubborn  ignore SIGTERM and SIGHUP, print "ready", sleep
//	escape    start a "stubborn" child in a new session with no
//	          environment but its mode (what no marker, process group or
//	          session finds), print the child's pid once it is ready, sleep
//	exit      exit with $ExitCodeEnv
func Main(own func(mode string) (code int, ok bool)) {
	mode := os.Getenv(ModeEnv)
	if mode == "" {
		return
	}
	if os.Getenv(IgnoreTermEnv) == "1" {
		signal.Ignore(syscall.SIGTERM)
	}
	if own != nil {
		if code, ok := own(mode); ok {
			os.Exit(code)
		}
	}
	os.Exit(shared(mode))
}

func shared(mode string) int {
	switch mode {
	case "sleep":
		fmt.Println("ready")
	case "stubborn":
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP)
		fmt.Println("ready")
	case "escape":
		c := exec.Command(os.Args[0])
		c.Env = []string{ModeEnv + "=stubborn"}
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		pid, err := StartReady(c)
		if err != nil {
			fmt.Fprintln(os.Stderr, "escape:", err)
			return 3
		}
		fmt.Println(pid)
	case "exit":
		code, err := strconv.Atoi(os.Getenv(ExitCodeEnv))
		if err != nil {
			fmt.Fprintln(os.Stderr, "exit code:", err)
			return 100
		}
		return code
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		return 125
	}
	time.Sleep(time.Hour)
	return 0
}

// Command is the test binary re-executed in mode, with this process's
// environment plus env (KEY=VALUE).
func Command(mode string, env ...string) *exec.Cmd {
	c := exec.Command(os.Args[0])
	c.Env = append(append(os.Environ(), ModeEnv+"="+mode), env...)
	return c
}

// StartReady starts c, waits for the "ready" line a helper prints on
// stdout and returns its pid. c's Stdout must be unset.
func StartReady(c *exec.Cmd) (int, error) {
	out, err := c.StdoutPipe()
	if err != nil {
		return 0, fmt.Errorf("stdout pipe: %w", err)
	}
	if err := c.Start(); err != nil {
		return 0, fmt.Errorf("start helper: %w", err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		return 0, fmt.Errorf("helper %d not ready: %q: %v", c.Process.Pid, line, err)
	}
	return c.Process.Pid, nil
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// Argv is pid's command line, nil when it is gone (or a kernel thread).
func Argv(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// Find lists the live processes, this one aside, whose command line
// match accepts: how tests count what a daemon left behind, by an
// argument no other process has rather than by anything the process could
// drop (a marker variable, a process group, a session).
func Find(match func(pid int, argv []string) bool) []int {
	ents, _ := os.ReadDir("/proc") // /proc is always there on Linux
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if argv := Argv(pid); argv != nil && match(pid, argv) && Alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// WithArg lists the live processes that have arg as one of their
// arguments (argv[0] aside).
func WithArg(arg string) []int {
	return Find(func(_ int, argv []string) bool { return slices.Contains(argv[1:], arg) })
}

package supervise

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-dev/harness/internal/proctest"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logs"
	"github.com/harness-dev/harness/internal/proctree"
	"github.com/harness-dev/harness/internal/runs"
)

// helperEnv selects a helper mode when the test binary is re-executed as
// a unit's child: proctest's, shared with proctree and cgroup.
const helperEnv = proctest.ModeEnv

// testReaper reaps grandchildren re-parented to the test process (it is a
// child subreaper, like the daemon).
var testReaper *proctree.Reaper

type reaperMain struct{ m *testing.M }

// Run stops the reaper after the tests so goleak sees no goroutine of it.
func (r reaperMain) Run() int {
	code := r.m.Run()
	testReaper.Stop()
	return code
}

// testInstance makes this binary's tree markers unique: markers are
// matched machine-wide, and another copy of these tests may run beside
// this one on a shared machine.
var testInstance = func() string {
	id, err := proctree.NewInstanceID()
	if err != nil {
		panic(err)
	}
	return "test" + id
}()

func TestMain(m *testing.M) {
	proctest.Main(runHelper) // returns unless this process is a helper
	if err := proctree.BecomeSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, "become subreaper:", err)
		os.Exit(1)
	}
	testReaper = proctree.NewReaper(slog.Default())
	testReaper.Start(context.Background())
	goleak.VerifyTestMain(reaperMain{m})
}

// runHelper is the child side, in this package's own modes (proctest.Main
// runs the shared ones: sleep, stubborn, escape):
//
//	exit         exit with $HELPER_CODE after $HELPER_DELAY
//	ignore-term  ignore SIGTERM, print "ready", sleep
//	print        print $HELPER_TEXT lines ("|" separated), then sleep
//	env          write $HELPER_VAR's value to $HELPER_OUT, print "ready", sleep
//	flaky        exit 1 while the count in $HELPER_COUNTER <= $HELPER_FAILS, then sleep
//	double-fork  start a setsid grandchild (via a middle process that exits), print "ready", sleep
//	middle       start a setsid "sleep" child, write its pid to $HELPER_OUT, exit
//	echo         copy stdin lines to stdout, a line to stderr; exit 0 on EOF
//	envless      start a "stubborn" child in a new session with an empty
//	             environment (no marker), write its pid to $HELPER_OUT, print
//	             "ready", sleep; with $HELPER_EXIT=1 exit 0 instead
func runHelper(mode string) (code int, ok bool) {
	switch mode {
	case "exit":
		if d, err := time.ParseDuration(os.Getenv("HELPER_DELAY")); err == nil {
			time.Sleep(d)
		}
		n, _ := strconv.Atoi(os.Getenv("HELPER_CODE"))
		return n, true
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
	case "print":
		for _, l := range strings.Split(os.Getenv("HELPER_TEXT"), "|") {
			fmt.Println(l)
		}
	case "env":
		if err := os.WriteFile(os.Getenv("HELPER_OUT"), []byte(os.Getenv(os.Getenv("HELPER_VAR"))), 0o600); err != nil {
			fmt.Println("write:", err)
			return 3, true
		}
		fmt.Println("ready")
	case "flaky":
		path := os.Getenv("HELPER_COUNTER")
		b, _ := os.ReadFile(path)
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		n++
		if err := os.WriteFile(path, []byte(strconv.Itoa(n)), 0o600); err != nil {
			return 3, true
		}
		fails, _ := strconv.Atoi(os.Getenv("HELPER_FAILS"))
		if n <= fails {
			return 1, true
		}
		fmt.Println("ready")
	case "double-fork":
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"=middle")
		if err := cmd.Run(); err != nil {
			fmt.Println("middle:", err)
			return 3, true
		}
		fmt.Println("ready")
	case "middle":
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"=sleep")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return 3, true
		}
		if err := os.WriteFile(os.Getenv("HELPER_OUT"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
			return 3, true
		}
		return 0, true // the grandchild is orphaned and re-parents to the subreaper
	case "envless":
		cmd := exec.Command(os.Args[0])
		cmd.Env = []string{helperEnv + "=stubborn"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		out, err := cmd.StdoutPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			fmt.Println("envless:", err)
			return 3, true
		}
		if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
			return 3, true
		}
		if err := os.WriteFile(os.Getenv("HELPER_OUT"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
			return 3, true
		}
		if os.Getenv("HELPER_EXIT") == "1" {
			return 0, true
		}
		fmt.Println("ready")
	case "echo":
		fmt.Fprintln(os.Stderr, "echo helper on stderr")
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			fmt.Println(sc.Text())
		}
		return 0, true
	default:
		return runTermHelper(mode) // else proctest's shared modes
	}
	time.Sleep(time.Hour)
	return 0, true
}

// recorder collects events and wakes waiters on each.
type recorder struct {
	mu      sync.Mutex
	events  []Event
	changed chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) add(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recorder) wake() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

func (r *recorder) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// env is one test unit with its collaborators.
type env struct {
	t      *testing.T
	dir    string
	u      *Unit
	log    *logs.Log
	runs   *runs.Store
	rec    *recorder
	tokens *Tokens
}

// helperCfg is a harness running the test binary in mode.
func helperCfg(name, mode string, extra map[string]string) UnitConfig {
	e := map[string]string{helperEnv: mode}
	for k, v := range extra {
		e[k] = v
	}
	return UnitConfig{Name: name, Kind: KindHarness, Cmd: os.Args[0], Env: e, Restart: RestartNo,
		StopGrace: 5 * time.Second}
}

// newEnv builds a unit; opts may adjust its Deps before New.
func newEnv(t *testing.T, cfg UnitConfig, opts ...func(*Deps)) *env {
	t.Helper()
	dir := t.TempDir()
	l, err := logs.Open(filepath.Join(dir, "logs"), cfg.Name, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := runs.Open(filepath.Join(dir, "runs.jsonl"), 100)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := proctree.OpenLedger(filepath.Join(dir, "ledger.json"))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: dir, log: l, runs: st, rec: newRecorder(), tokens: NewTokens()}
	deps := Deps{Log: l, Runs: st, Tokens: e.tokens, Reaper: testReaper, Ledger: ledger,
		Instance: testInstance, OnEvent: e.rec.add,
		Limits: Limits{WaitDelay: time.Second, OutputDrain: 200 * time.Millisecond}}
	for _, o := range opts {
		o(&deps)
	}
	e.u = New(cfg, deps)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := e.u.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		<-e.u.Done()
		if err := l.Close(); err != nil {
			t.Errorf("close log: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("close runs: %v", err)
		}
		ledger.Flush() // its writer is done with the temp dir
		if left := ledger.Entries(); len(left) != 0 {
			t.Errorf("ledger keeps %d entries after close", len(left))
		}
	})
	return e
}

// waitFor waits until cond holds, woken by unit events (Status is
// published before each event) and log appends.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	for {
		wake, logWake := e.rec.wake(), e.log.Changed()
		if cond() {
			return
		}
		select {
		case <-wake:
		case <-logWake:
		case <-deadline.C:
			e.t.Fatalf("timed out waiting for %s; status %+v", what, e.u.Status())
		}
	}
}

func (e *env) waitState(s State) {
	e.t.Helper()
	e.waitFor("state "+string(s), func() bool { return e.u.Status().State == s })
}

// logHas reports whether an activity entry contains text.
func (e *env) logHas(text string) bool {
	ents, _ := e.log.EntriesAfter(0, 100000)
	for _, en := range ents {
		if strings.Contains(en.Text, text) {
			return true
		}
	}
	return false
}

func (e *env) waitLog(text string) {
	e.t.Helper()
	e.waitFor("log line "+strconv.Quote(text), func() bool { return e.logHas(text) })
}

func (e *env) start() {
	e.t.Helper()
	if err := e.u.Start(context.Background(), api.CauseManual); err != nil {
		e.t.Fatalf("start: %v", err)
	}
}

func (e *env) stop() {
	e.t.Helper()
	if err := e.u.Stop(context.Background()); err != nil {
		e.t.Fatalf("stop: %v", err)
	}
}

// readAll returns every byte under dir, for secret greps.
func readAll(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(&b, f)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

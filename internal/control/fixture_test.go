package control

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/logs"
	"github.com/harness-dev/harness/internal/mask"
	"github.com/harness-dev/harness/internal/runs"
	"github.com/harness-dev/harness/internal/supervise"
	"go.uber.org/goleak"
)

var quiet = slog.New(slog.DiscardHandler)

// fixture is a Control on a temp dir with real `sh -c` units: a config
// file, a state file that outlives each Control (for intent across daemon
// restarts), logs and runs. Operations go through Call with JSON, as the
// socket sends them.
type fixture struct {
	t       *testing.T
	dir     string
	cfgPath string
	c       *Control
	runs    *runs.Store
	changed chan struct{} // a unit event happened (capacity 1)
	// limits and upstreams, when set before open, go to every unit and
	// to Options.Upstreams.
	limits    supervise.Limits
	upstreams UpstreamHooks
	// onEvent, when set before open, sees every event control passes on.
	onEvent func(supervise.Event)
	// newNotifier and newWebhooks, when set before open, go to Options.
	newNotifier func(*Control) Notifier
	newWebhooks func(*Control) (Webhooks, error)
	// masker, when set before open, is Options.Masker.
	masker *mask.Masker
}

// sleeper is a harness table whose process runs until stopped.
func sleeper(name, extra string) string {
	return "[harness." + name + "]\ncmd = \"sh\"\nargs = [\"-c\", \"exec sleep 100000\"]\nstop_grace = 2\n" + extra + "\n"
}

// newFixture writes toml as the global config and boots a Control on it.
func newFixture(t *testing.T, toml string, opts ...func(*fixture)) *fixture {
	t.Helper()
	f := &fixture{t: t, dir: t.TempDir(), changed: make(chan struct{}, 1)}
	for _, o := range opts {
		o(f)
	}
	f.cfgPath = filepath.Join(f.dir, "harness.toml")
	f.write(toml)
	f.open()
	t.Cleanup(f.close)
	return f
}

func (f *fixture) write(toml string) {
	f.t.Helper()
	if err := os.WriteFile(f.cfgPath, []byte(toml), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// open builds and boots a Control on the fixture's files, as a daemon
// start would.
func (f *fixture) open() {
	f.t.Helper()
	cfg, err := config.Load(f.cfgPath)
	if err != nil {
		f.t.Fatal(err)
	}
	f.runs, err = runs.Open(filepath.Join(f.dir, "runs.jsonl"), 0)
	if err != nil {
		f.t.Fatal(err)
	}
	logDir := filepath.Join(f.dir, "logs")
	f.c, err = New(cfg, Options{
		ConfigPath: f.cfgPath,
		Runs:       f.runs,
		State:      &fileState{path: filepath.Join(f.dir, "state.json")},
		OpenLog: func(name string, onEntry func(logs.Entry)) (*logs.Log, error) {
			return logs.Open(logDir, name, logs.Options{OnEntry: onEntry})
		},
		NewDeps: func(string, supervise.Kind) (supervise.Deps, error) {
			return supervise.Deps{Logger: quiet, Limits: f.limits}, nil
		},
		Upstreams:   f.upstreams,
		Logger:      quiet,
		NewNotifier: f.newNotifier,
		NewWebhooks: f.newWebhooks,
		Masker:      f.masker,
		OnEvent: func(ev supervise.Event) {
			if f.onEvent != nil {
				f.onEvent(ev)
			}
			select {
			case f.changed <- struct{}{}:
			default:
			}
		},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.c.Boot(context.Background())
}

// close stops every unit and the Control, as a daemon shutdown does.
func (f *fixture) close() {
	if f.c == nil {
		return
	}
	f.c.Close(context.Background())
	f.runs.Close()
	f.c = nil
}

// call runs op with args (marshalled as the socket would) and decodes the
// answer into out when it is not nil.
func (f *fixture) call(op string, args any, out any) error {
	f.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		f.t.Fatal(err)
	}
	res, err := f.c.Call(context.Background(), api.Caller{Kind: api.Operator}, op, raw)
	if err != nil || out == nil {
		return err
	}
	b, err := json.Marshal(res)
	if err != nil {
		f.t.Fatal(err)
	}
	return json.Unmarshal(b, out)
}

func (f *fixture) mustCall(op string, args any, out any) {
	f.t.Helper()
	if err := f.call(op, args, out); err != nil {
		f.t.Fatalf("%s: %v", op, err)
	}
}

// states is every harness's state, by name.
func (f *fixture) states() map[string]string {
	f.t.Helper()
	var units []api.UnitInfo
	f.mustCall(api.OpList, api.ListArgs{}, &units)
	out := map[string]string{}
	for _, u := range units {
		out[u.Name] = u.State
	}
	return out
}

// waitStates waits (on unit events, not sleeps) until each named unit is
// in the given state; "" means the unit is gone.
func (f *fixture) waitStates(want map[string]string) {
	f.t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		got := f.states()
		ok := true
		for name, st := range want {
			if got[name] != st {
				ok = false
			}
		}
		if ok {
			return
		}
		select {
		case <-f.changed:
		case <-time.After(100 * time.Millisecond): // a state published without an event
		case <-deadline:
			f.t.Fatalf("states = %v, want %v", got, want)
		}
	}
}

// waitUntil waits (on unit events, not sleeps) until cond holds.
func (f *fixture) waitUntil(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.After(15 * time.Second)
	for !cond() {
		select {
		case <-f.changed:
		case <-time.After(100 * time.Millisecond): // a change published without an event
		case <-deadline:
			f.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// fileState is the state file as the daemon keeps it: JSON, read at New.
type fileState struct {
	mu   sync.Mutex
	path string
}

func (s *fileState) Load() (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st State
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(b, &st)
}

func (s *fileState) Save(st State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return os.WriteFile(s.path, b, 0o600)
}

// saved reads the state file as the next daemon would.
func (f *fixture) saved() State {
	f.t.Helper()
	st, err := (&fileState{path: filepath.Join(f.dir, "state.json")}).Load()
	if err != nil {
		f.t.Fatal(err)
	}
	return st
}

// TestMain checks that Close leaves no goroutine of the fleet behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

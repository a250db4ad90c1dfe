//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// hookRequest is one request a test receiver got.
type hookRequest struct {
	Path   string
	Header http.Header
	Body   string
	At     time.Time
}

// hookReceiver is a local HTTP receiver standing in for Slack, Discord,
// ntfy or a JSON webhook: it records every request and answers by path
// (/500 -> 500, /400 -> 400, /hang never answers until the test ends).
type hookReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []hookRequest
	hang    chan struct{}
	arrived chan struct{}
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{hang: make(chan struct{}), arrived: make(chan struct{}, 4096)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, hookRequest{Path: req.URL.Path, Header: req.Header.Clone(), Body: string(b), At: time.Now()})
		r.mu.Unlock()
		r.arrived <- struct{}{}
		switch req.URL.Path {
		case "/500":
			w.WriteHeader(500)
		case "/400":
			w.WriteHeader(400)
		case "/hang":
			select {
			case <-r.hang:
			case <-req.Context().Done():
			}
		}
	}))
	t.Cleanup(func() { close(r.hang); r.Close() })
	return r
}

// on returns the requests to path so far.
func (r *hookReceiver) on(path string) []hookRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hookRequest
	for _, q := range r.reqs {
		if q.Path == path {
			out = append(out, q)
		}
	}
	return out
}

// waitOn waits until path got n requests whose body contains sub.
func (r *hookReceiver) waitOn(t *testing.T, path, sub string, n int) []hookRequest {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		var got []hookRequest
		for _, q := range r.on(path) {
			if strings.Contains(q.Body, sub) {
				got = append(got, q)
			}
		}
		if len(got) >= n {
			return got
		}
		select {
		case <-r.arrived:
		case <-deadline:
			t.Fatalf("%s: %d requests containing %q, want %d; all: %+v", path, len(got), sub, n, r.on(path))
		}
	}
}

// notifyStats is daemon-info's notify row.
type notifyStats struct {
	Name       string `json:"name"`
	Sink       string `json:"sink"`
	Sent       int    `json:"sent"`
	Failed     int    `json:"failed"`
	Dropped    int    `json:"dropped"`
	Retries    int    `json:"retries"`
	Suppressed int    `json:"suppressed"`
	Queued     int    `json:"queued"`
	LastError  string `json:"last_error"`
}

func (f *fleet) notifyStats() map[string]notifyStats {
	f.T.Helper()
	var info struct {
		Notify []notifyStats `json:"notify"`
	}
	f.MustJSON(&info, "daemon-info")
	out := map[string]notifyStats{}
	for _, s := range info.Notify {
		out[s.Name] = s
	}
	return out
}

// notifyMessage is the JSON a json sink or a command gets.
type notifyMessage struct {
	Notifier  string   `json:"notifier"`
	Event     string   `json:"event"`
	Harness   string   `json:"harness"`
	Host      string   `json:"host"`
	Title     string   `json:"title"`
	Reason    string   `json:"reason"`
	ExitCode  *int     `json:"exit_code"`
	LastLines []string `json:"last_lines"`
	Prompt    string   `json:"prompt"`
	Choices   []string `json:"choices"`
	Actions   []struct {
		Label   string `json:"label"`
		Command string `json:"command"`
	} `json:"actions"`
	Test bool `json:"test"`
}

// TestScenario_NotifyFailedAndJobFailedInEveryFormat: a harness started by
// hand that fails, and a job a trigger ran that fails, each reach a json,
// a slack, a discord and an ntfy receiver once, with the reason, the last
// lines and how to act; a second failure inside the cooldown is not sent;
// `harness notify test` delivers a sample.
func TestScenario_NotifyFailedAndJobFailedInEveryFormat(t *testing.T) {
	r := newHookReceiver(t)
	dir := t.TempDir()
	envFile := filepath.Join(dir, "hook.env")
	if err := os.WriteFile(envFile, []byte("HOOK_TOKEN=tok-e2e-4242\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := `
[harness.svc]
cmd = "sh"
args = ["-c", "echo preparing; echo 'boom at step 3'; exit 3"]
restart = "no"

[harness.nightly]
cmd = "sh"
args = ["-c", "echo 'nightly broke'; exit 4"]
restart = "no"
`
	for _, format := range []string{"json", "slack", "discord", "ntfy"} {
		config += fmt.Sprintf(`
[notify.%[1]s]
url = "%[2]s/%[1]s"
format = "%[1]s"
on = ["failed", "job_failed"]
cooldown_s = 3600
`, format, r.URL)
		if format == "json" {
			config += fmt.Sprintf("headers = { Authorization = \"Bearer ${HOOK_TOKEN}\" }\nenv_file = %q\n", envFile)
		}
	}
	f := newFleet(t, config)

	f.MustRun("start", "svc")
	for _, format := range []string{"json", "slack", "discord", "ntfy"} {
		got := r.waitOn(t, "/"+format, "svc", 1)
		body := got[0].Body
		switch format {
		case "json":
			var m notifyMessage
			if err := json.Unmarshal([]byte(body), &m); err != nil {
				t.Fatalf("json: %v: %s", err, body)
			}
			if m.Event != "failed" || m.Harness != "svc" || m.Reason != "exited with code 3" || m.ExitCode == nil || *m.ExitCode != 3 ||
				!slices.Contains(m.LastLines, "boom at step 3") || m.Host == "" || m.Actions[0].Command != "harness logs svc --lines 50" {
				t.Errorf("json message: %+v", m)
			}
			if h := got[0].Header.Get("Authorization"); h != "Bearer tok-e2e-4242" {
				t.Errorf("Authorization %q", h)
			}
		case "slack":
			var m struct{ Text string }
			json.Unmarshal([]byte(body), &m)
			if !strings.Contains(m.Text, "*svc failed on ") || !strings.Contains(m.Text, "boom at step 3") || !strings.Contains(m.Text, "harness restart svc") {
				t.Errorf("slack: %s", body)
			}
		case "discord":
			var m struct{ Content string }
			json.Unmarshal([]byte(body), &m)
			if !strings.Contains(m.Content, "**svc failed on ") || !strings.Contains(m.Content, "exited with code 3") {
				t.Errorf("discord: %s", body)
			}
		case "ntfy":
			if !strings.HasPrefix(got[0].Header.Get("Title"), "svc failed on ") || got[0].Header.Get("Tags") != "failed" ||
				!strings.Contains(body, "boom at step 3") {
				t.Errorf("ntfy: %v %s", got[0].Header, body)
			}
		}
	}

	f.MustRun("trigger", "nightly")
	for _, format := range []string{"json", "slack", "discord", "ntfy"} {
		got := r.waitOn(t, "/"+format, "nightly", 1)
		if !strings.Contains(got[0].Body, "exited with code 4") || !strings.Contains(got[0].Body+fmt.Sprint(got[0].Header), "job") {
			t.Errorf("%s job_failed: %s", format, got[0].Body)
		}
		if format == "json" && !strings.Contains(got[0].Body, `"event":"job_failed"`) {
			t.Errorf("json job_failed: %s", got[0].Body)
		}
	}

	// The same failure again, inside cooldown_s: counted, not sent.
	f.MustRun("start", "svc")
	f.WaitFor("the second failure to be suppressed", 20*time.Second, func() bool {
		for _, s := range f.notifyStats() {
			if s.Suppressed != 1 {
				return false
			}
		}
		return true
	})
	for name, s := range f.notifyStats() {
		if s.Sent != 2 || s.Failed != 0 || s.Dropped != 0 {
			t.Errorf("%s: %+v", name, s)
		}
	}
	if n := len(r.waitOn(t, "/json", "svc", 1)); n != 1 {
		t.Errorf("json got %d messages about svc", n)
	}

	var res struct {
		Name     string `json:"name"`
		Attempts int    `json:"attempts"`
		Status   int    `json:"status"`
	}
	f.MustJSON(&res, "notify", "test", "json")
	if res.Attempts != 1 || res.Status != 200 {
		t.Errorf("notify test: %+v", res)
	}
	got := r.waitOn(t, "/json", `"test":true`, 1)
	var m notifyMessage
	json.Unmarshal([]byte(got[0].Body), &m)
	if m.Event != "waiting" || m.Prompt == "" || m.Actions[0].Command != "harness answer example Yes" {
		t.Errorf("sample: %+v", m)
	}
	if out, _, code := f.Run("notify", "test", "nope", "--json"); code == 0 || !strings.Contains(out, "invalid_argument") {
		t.Errorf("notify test nope: %d %s", code, out)
	}
	// Nothing the daemon wrote shows the header's secret.
	logText, _ := os.ReadFile(f.LogPath)
	if strings.Contains(string(logText), "tok-e2e-4242") {
		t.Error("daemon log shows the header secret")
	}
}

// TestScenario_NotifyRetriesOn500NotOn400: a receiver answering 500 gets
// every try, one answering 400 gets one.
func TestScenario_NotifyRetriesOn500NotOn400(t *testing.T) {
	r := newHookReceiver(t)
	f := newFleet(t, fmt.Sprintf(`
[harness.svc]
cmd = "sh"
args = ["-c", "exit 1"]
restart = "no"

[notify.five]
url = "%[1]s/500"
on = ["failed"]

[notify.four]
url = "%[1]s/400"
on = ["failed"]
`, r.URL))
	f.MustRun("start", "svc")
	got := r.waitOn(t, "/500", "svc", 4) // MaxAttempts
	f.WaitFor("both to give up", 20*time.Second, func() bool {
		s := f.notifyStats()
		return s["five"].Failed == 1 && s["four"].Failed == 1
	})
	s := f.notifyStats()
	if s["five"].Retries != 3 || s["four"].Retries != 0 || !strings.Contains(s["four"].LastError, "400") {
		t.Errorf("stats: %+v", s)
	}
	if n := len(r.on("/400")); n != 1 {
		t.Errorf("the 400 receiver got %d requests", n)
	}
	// The tries back off: each gap is longer than the one before.
	for i := 2; i < len(got); i++ {
		if got[i].At.Sub(got[i-1].At) <= got[i-1].At.Sub(got[i-2].At) {
			t.Errorf("no backoff between tries: %v", []time.Time{got[0].At, got[1].At, got[2].At, got[3].At})
		}
	}
}

// TestScenario_HangingReceiverCostsSupervisionNothing: while a receiver
// never answers and 100 messages queue for it, `harness list` answers as
// fast as before and the harnesses' states change as usual.
func TestScenario_HangingReceiverCostsSupervisionNothing(t *testing.T) {
	r := newHookReceiver(t)
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "[harness.h%03d]\ncmd = \"sh\"\nargs = [\"-c\", \"exit 1\"]\nrestart = \"no\"\n", i)
	}
	fmt.Fprintf(&b, "[notify.slow]\nurl = %q\non = [\"failed\"]\ntimeout_s = 60\n", r.URL+"/hang")
	f := newFleet(t, b.String())
	listTime := func() time.Duration {
		var ds []time.Duration
		for range 5 {
			start := time.Now()
			f.MustRun("list")
			ds = append(ds, time.Since(start))
		}
		slices.Sort(ds)
		return ds[2]
	}
	before := listTime()
	names := []string{"start"}
	for i := range 100 {
		names = append(names, fmt.Sprintf("h%03d", i))
	}
	f.MustRun(names...)
	r.waitOn(t, "/hang", "failed", 1)
	f.WaitFor("100 failures to queue", 30*time.Second, func() bool {
		s := f.notifyStats()["slow"]
		return s.Queued+s.Dropped == 99 // one is in flight
	})
	during := listTime()
	t.Logf("harness list: %s before, %s while 99 messages queue", before, during)
	if during > 3*before+200*time.Millisecond {
		t.Errorf("list took %s while messages queue, %s before", during, before)
	}
	for i := range 100 {
		if u := f.unit(fmt.Sprintf("h%03d", i)); u.State != "failed" {
			t.Errorf("h%03d is %s", i, u.State)
		}
	}
	if s := f.notifyStats()["slow"]; s.Dropped != 0 {
		t.Errorf("dropped %d of 100 (queue bound %d)", s.Dropped, 256)
	}
}

// TestScenario_NotifyCommandSink: the program gets the message as JSON on
// stdin; one that never exits is killed at its timeout with everything it
// started, tries and all.
func TestScenario_NotifyCommandSink(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "msg.json")
	pids := filepath.Join(dir, "pids")
	f := newFleet(t, fmt.Sprintf(`
[harness.svc]
cmd = "sh"
args = ["-c", "echo 'it broke'; exit 5"]
restart = "no"

[notify.script]
command = ["sh", "-c", "cat > \"$OUT.tmp\" && mv \"$OUT.tmp\" \"$OUT\""]
env = { OUT = %q }
on = ["failed"]

[notify.stuck]
command = ["sh", "-c", "sleep 100000 & echo $! >> \"$P\"; echo $$ >> \"$P\"; wait"]
env = { P = %q }
on = ["failed"]
timeout_s = 0.5
`, out, pids))
	f.MustRun("start", "svc")
	f.WaitFor("the command to get the message", 20*time.Second, func() bool {
		_, err := os.Stat(out)
		return err == nil
	})
	var m notifyMessage
	b, _ := os.ReadFile(out)
	if err := json.Unmarshal(b, &m); err != nil || m.Notifier != "script" || m.Event != "failed" || m.Harness != "svc" ||
		!slices.Contains(m.LastLines, "it broke") {
		t.Errorf("stdin: %v %s", err, b)
	}
	f.WaitFor("the stuck sink to be given up", 30*time.Second, func() bool {
		return f.notifyStats()["stuck"].Failed == 1
	})
	s := f.notifyStats()["stuck"]
	if !strings.Contains(s.LastError, "killed after 500ms") || s.Retries != 3 {
		t.Errorf("stuck: %+v", s)
	}
	b, _ = os.ReadFile(pids)
	fields := strings.Fields(string(b))
	if len(fields) != 8 {
		t.Errorf("pids of 4 tries: %q", fields)
	}
	for _, p := range fields {
		pid, _ := strconv.Atoi(p)
		waitGone(t, "a process of the stuck sink", pid)
	}
}

//go:build e2e

package e2e

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// webhookPost sends body to url with headers and returns the status and
// the answer.
func webhookPost(t *testing.T, url string, body []byte, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func githubSign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func standardSign(key []byte, id, ts string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// TestScenario_WebhooksTriggerTheNamedJobWithThePayloadFile: GitHub- and
// Standard-Webhooks-signed deliveries start the job (cause webhook) with
// the payload in a 0600 file named by HARNESS_EVENT_FILE, never on its
// command line; a wrong signature (401), a replay (200, nothing runs), an
// unwanted event, an unknown path (404) and an oversized body (413) start
// nothing; the file goes once its run leaves the history (keep_runs), and
// a replay is still known after a daemon restart.
func TestScenario_WebhooksTriggerTheNamedJobWithThePayloadFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o700)
	envFile := filepath.Join(dir, "gh.env")
	const ghSecret = "gh-hook-secret-777"
	os.WriteFile(envFile, []byte("GH_SECRET="+ghSecret+"\n"), 0o600)
	stdKey := []byte("standard-webhooks-key-0123456789")
	f := newFleet(t, fmt.Sprintf(`
[daemon]
webhook_listen = "127.0.0.1:0"

[harness.review]
cmd = "sh"
args = ["-c", "cp \"$HARNESS_EVENT_FILE\" %[1]s/got-$HARNESS_DELIVERY.json; stat -c %%a \"$HARNESS_EVENT_FILE\" > %[1]s/mode-$HARNESS_DELIVERY; echo \"$HARNESS_EVENT $HARNESS_WEBHOOK\" > %[1]s/event-$HARNESS_DELIVERY; cat /proc/$$/cmdline > %[1]s/argv-$HARNESS_DELIVERY"]
restart = "no"
keep_runs = 1

[webhook.gh]
path = "/hooks/github"
verify = "github"
secret = "${GH_SECRET}"
env_file = %[2]q
events = ["pull_request.opened"]
harnesses = ["review"]
max_body_bytes = 4096

[webhook.std]
path = "/hooks/std"
verify = "standard"
secret = "${STD_SECRET}"
env = { STD_SECRET = "whsec_%[3]s" }
harnesses = ["review"]
`, out, envFile, base64.StdEncoding.EncodeToString(stdKey)))
	var info struct {
		Webhooks struct {
			URL    string `json:"url"`
			Routes []struct {
				Name                                  string
				Accepted, Ignored, Replayed, Rejected int `json:",omitempty"`
				TooLarge                              int `json:"too_large,omitempty"`
				Triggered                             int `json:",omitempty"`
			} `json:"routes"`
		} `json:"webhooks"`
	}
	f.MustJSON(&info, "daemon-info")
	base := info.Webhooks.URL
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("webhooks url %q", base)
	}
	runsOf := func() []struct {
		ID    uint64 `json:"id"`
		Cause string `json:"cause"`
	} {
		var rs []struct {
			ID    uint64 `json:"id"`
			Cause string `json:"cause"`
		}
		f.MustJSON(&rs, "runs", "review")
		return rs
	}
	waitFile := func(path string) string {
		var b []byte
		f.WaitFor(path, 20*time.Second, func() bool {
			var err error
			b, err = os.ReadFile(path)
			return err == nil && len(b) > 0
		})
		return string(b)
	}

	payload := []byte(`{"action":"opened","number":7,"pull_request":{"title":"Add notifications"}}`)
	gh := func(body []byte, delivery, event, sig string) (int, string) {
		return webhookPost(t, base+"/hooks/github", body, map[string]string{"X-GitHub-Event": event,
			"X-GitHub-Delivery": delivery, "X-Hub-Signature-256": sig, "Content-Type": "application/json"})
	}
	code, ans := gh(payload, "d-1", "pull_request", githubSign(ghSecret, payload))
	if code != 202 || !strings.Contains(ans, `"run_id"`) {
		t.Fatalf("github delivery: %d %s", code, ans)
	}
	if got := waitFile(filepath.Join(out, "got-d-1.json")); got != string(payload) {
		t.Errorf("payload file: %q", got)
	}
	if mode := strings.TrimSpace(waitFile(filepath.Join(out, "mode-d-1"))); mode != "600" {
		t.Errorf("payload file mode %s", mode)
	}
	if ev := strings.TrimSpace(waitFile(filepath.Join(out, "event-d-1"))); ev != "pull_request gh" {
		t.Errorf("HARNESS_EVENT HARNESS_WEBHOOK = %q", ev)
	}
	// The audit log names the webhook and its door.
	f.waitAudit("trigger", "review", "webhook", "webhook:gh")
	if argv := waitFile(filepath.Join(out, "argv-d-1")); strings.Contains(argv, "number") || strings.Contains(argv, "webhooks/events") {
		t.Errorf("the payload reached the command line: %q", argv)
	}
	rs := runsOf()
	if len(rs) != 1 || rs[0].Cause != "webhook" {
		t.Fatalf("runs: %+v", rs)
	}
	f.waitState("review", "stopped")

	for _, tt := range []struct {
		name string
		code int
		send func() (int, string)
	}{
		{"replay", 200, func() (int, string) { return gh(payload, "d-1", "pull_request", githubSign(ghSecret, payload)) }},
		{"wrong signature", 401, func() (int, string) {
			return gh(payload, "d-2", "pull_request", githubSign("not-the-secret", payload))
		}},
		{"tampered body", 401, func() (int, string) {
			return gh([]byte(`{"action":"opened","number":8}`), "d-3", "pull_request", githubSign(ghSecret, payload))
		}},
		{"unwanted event", 200, func() (int, string) {
			push := []byte(`{"ref":"refs/heads/main"}`) // a body of its own: a seen one is a replay
			return gh(push, "d-4", "push", githubSign(ghSecret, push))
		}},
		{"unwanted action", 200, func() (int, string) {
			closed := []byte(`{"action":"closed"}`)
			return gh(closed, "d-5", "pull_request", githubSign(ghSecret, closed))
		}},
		{"oversized", 413, func() (int, string) {
			big := bytes.Repeat([]byte("x"), 5000)
			return gh(big, "d-6", "pull_request", githubSign(ghSecret, big))
		}},
		{"unknown path", 404, func() (int, string) {
			return webhookPost(t, base+"/hooks/nope", payload, map[string]string{"X-Hub-Signature-256": githubSign(ghSecret, payload)})
		}},
	} {
		if code, ans := tt.send(); code != tt.code {
			t.Errorf("%s: %d %s, want %d", tt.name, code, ans, tt.code)
		}
	}
	if rs := runsOf(); len(rs) != 1 {
		t.Errorf("refused deliveries ran the job: %+v", rs)
	}

	// A Standard Webhooks delivery; with keep_runs = 1 the first run
	// leaves the history and its payload file goes with it.
	std := []byte(`{"type":"invoice.paid","data":{"id":"in_1"}}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	stdPost := func(id, ts, sig string) (int, string) {
		return webhookPost(t, base+"/hooks/std", std, map[string]string{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": sig})
	}
	if code, ans := stdPost("msg_1", ts, standardSign([]byte("wrong-key"), "msg_1", ts, std)); code != 401 {
		t.Errorf("standard, wrong key: %d %s", code, ans)
	}
	old := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
	if code, ans := stdPost("msg_0", old, standardSign(stdKey, "msg_0", old, std)); code != 401 {
		t.Errorf("standard, stale timestamp: %d %s", code, ans)
	}
	if code, ans := stdPost("msg_1", ts, "v1,bm9wZQ== "+standardSign(stdKey, "msg_1", ts, std)); code != 202 {
		t.Fatalf("standard delivery: %d %s", code, ans)
	}
	if got := waitFile(filepath.Join(out, "got-msg_1.json")); got != string(std) {
		t.Errorf("standard payload file: %q", got)
	}
	if ev := strings.TrimSpace(waitFile(filepath.Join(out, "event-msg_1"))); ev != "invoice.paid std" {
		t.Errorf("standard event %q", ev)
	}
	events := filepath.Join(f.State, "webhooks", "events")
	f.WaitFor("the first run's payload file to go", 20*time.Second, func() bool {
		files, _ := filepath.Glob(filepath.Join(events, "*.json"))
		var payloads []string
		for _, p := range files {
			if filepath.Base(p) != "index.json" {
				payloads = append(payloads, p)
			}
		}
		return len(payloads) == 1 && strings.HasPrefix(filepath.Base(payloads[0]), "std-")
	})

	f.MustJSON(&info, "daemon-info")
	stats := map[string]string{}
	for _, r := range info.Webhooks.Routes {
		b, _ := json.Marshal(r)
		stats[r.Name] = string(b)
	}
	for name, want := range map[string]string{
		"gh":  `{"Name":"gh","Accepted":1,"Ignored":2,"Replayed":1,"Rejected":2,"too_large":1,"Triggered":1}`,
		"std": `{"Name":"std","Accepted":1,"Rejected":2,"Triggered":1}`,
	} {
		if stats[name] != want {
			t.Errorf("%s stats %s, want %s", name, stats[name], want)
		}
	}

	// Delivery ids outlive the daemon.
	f.Stop()
	f.start()
	f.MustJSON(&info, "daemon-info")
	if code, ans := webhookPost(t, info.Webhooks.URL+"/hooks/github", payload, map[string]string{"X-GitHub-Event": "pull_request",
		"X-GitHub-Delivery": "d-1", "X-Hub-Signature-256": githubSign(ghSecret, payload)}); code != 200 || !strings.Contains(ans, "duplicate") {
		t.Errorf("replay after restart: %d %s", code, ans)
	}
}

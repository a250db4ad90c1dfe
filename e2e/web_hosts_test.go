//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/harness-dev/harness/internal/testenv"
)

// pageClient drives the page as its script does: a signed-in cookie,
// the CSRF token of the page, fragments and POSTs with the CSRF header.
type pageClient struct {
	t    *testing.T
	c    *http.Client
	base string
	csrf string
}

func newPageClient(t *testing.T, base, token string) *pageClient {
	t.Helper()
	c := freshClient()
	if st, err := dashSignIn(context.Background(), c, base, token); err != nil || st != http.StatusSeeOther {
		t.Fatalf("sign in: %d %v", st, err)
	}
	p := &pageClient{t: t, c: c, base: base}
	_, body := p.get("/")
	m := regexp.MustCompile(`name="csrf-token" content="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token on the fleet page:\n%s", body)
	}
	p.csrf = m[1]
	return p
}

func (p *pageClient) get(path string) (time.Duration, string) {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.base+path, nil)
	req.Header.Set("Accept", "text/x-fragment")
	start := time.Now()
	resp, err := p.c.Do(req)
	if err != nil {
		p.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	took := time.Since(start)
	if resp.StatusCode != http.StatusOK {
		p.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return took, string(b)
}

// post sends a page action and returns its status and body.
func (p *pageClient) post(path, form string) (int, string, time.Duration) {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.base+path, strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-CSRF-Token", p.csrf)
	req.Header.Set("Origin", p.base)
	start := time.Now()
	resp, err := p.c.Do(req)
	if err != nil {
		p.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), time.Since(start)
}

// hostRows is the part of a fleet fragment that is host's section.
func hostSection(fragment, host string) string {
	i := strings.Index(fragment, `<section class="hostgroup" data-host="`+host+`"`)
	if i < 0 {
		return ""
	}
	rest := fragment[i:]
	if j := strings.Index(rest, "</section>"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// hostsRig is a second daemon (the demo agent asking to edit, an idle
// harness) behind a real sshd with a write key and a read key, and the
// local daemon whose page has [host.box] (the write key, notify),
// [host.ro] (the read key) and [host.dead] (a port that accepts and never
// answers), with a json notification sink on hook.
func hostsRig(t *testing.T) (remote *fleet, s *sshd, f *fleet, hook *hookReceiver) {
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "README.md"), []byte("# before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return hostsRigWith(t, fmt.Sprintf(`%s
[harness.idle]
cmd = "sleep"
args = ["100000"]
`, demoHarness(work, "Edit the README")))
}

// hostsRigWith is hostsRig with remoteCfg as the second daemon's config.
func hostsRigWith(t *testing.T, remoteCfg string) (remote *fleet, s *sshd, f *fleet, hook *hookReceiver) {
	remote = newFleet(t, remoteCfg)
	bridge := func(grant string) string {
		return fmt.Sprintf("%s --socket %s bridge --grant %s", harnessBin, remote.Socket, grant)
	}
	s = newSSHD(t, sshKey{Name: "writer", Command: bridge("read,write,input") + " --key writer"}, sshKey{Name: "reader", Command: bridge("read")})
	dead := testenv.SilentAddr(t)
	hook = newHookReceiver(t)
	f = newFleetOnEnv(t, operatorWeb+fmt.Sprintf(`
[notify.hook]
url = "%s/hook"
format = "json"
on = ["waiting"]

[host.box]
ssh = %q
identity = %q
notify = true

[host.ro]
ssh = %q
identity = %q

[host.dead]
ssh = "ssh://%s@%s"
identity = %q
`, hook.URL, s.Host(), filepath.Join(s.Dir, "writer"), s.Host(), filepath.Join(s.Dir, "reader"), s.User, dead, filepath.Join(s.Dir, "reader")),
		// The cheapest key exchange: the tests share two loaded cores.
		"HARNESS_SSH_COMMAND=ssh -F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o KexAlgorithms=curve25519-sha256")
	return remote, s, f, hook
}

// TestScenario_EveryMachineInOnePage: a second daemon behind a real sshd
// runs the demo agent; the local page, with [host.box] (a key granting
// read,write,input), [host.ro] (a read key to the same daemon) and
// [host.dead] (a port that accepts and never answers), lists box's fleet
// with the waiting prompt and its choices, answers it there, starts and
// stops a harness there; ro's buttons are disabled and, posted anyway,
// refused by that host's bridge with its words; dead shows its error and
// the page's requests never wait on it. A real Chromium shows the same.
func TestScenario_EveryMachineInOnePage(t *testing.T) {
	t0 := time.Now()
	stage := func(what string) { t.Logf("%6.2fs %s", time.Since(t0).Seconds(), what) }
	remote, s, f, hook := hostsRig(t)
	remote.waitAgent("demo", "waiting")
	stage("both daemons and sshd up")
	page := newPageClient(t, f.webBase(), strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token")))

	// Every fragment the page fetches is timed: none may wait on dead.
	var slowest time.Duration
	fragment := func() string {
		took, body := page.get("/?fragment=1")
		slowest = max(slowest, took)
		return body
	}
	var frag string
	f.WaitFor("box's waiting demo agent on the page", 20*time.Second, func() bool {
		frag = fragment()
		// box and ro are two keys to one daemon, each read on its own
		// schedule: both must have read the agent waiting.
		return strings.Contains(hostSection(frag, "box"), `data-choice="Yes"`) && strings.Contains(hostSection(frag, "ro"), `data-choice="Yes"`)
	})
	stage("box and ro on the page")
	box, ro := hostSection(frag, "box"), hostSection(frag, "ro")
	if !strings.Contains(box, `class="unit remote is-waiting" data-host="box" data-name="demo"`) || !strings.Contains(box, "Allow edit to README.md?") {
		t.Fatalf("box's section lacks the waiting demo row:\n%s", box)
	}
	if strings.Contains(box, "disabled") {
		t.Fatalf("box's key grants write and input, yet a button is disabled:\n%s", box)
	}
	for _, want := range []string{`data-choice="Yes" disabled`, `data-act="start" disabled`, "this host's key grants read"} {
		if !strings.Contains(ro, want) {
			t.Fatalf("ro's section lacks %q:\n%s", want, ro)
		}
	}
	if d := hostSection(frag, "dead"); !strings.Contains(d, `class="host-error"`) {
		t.Fatalf("dead's section shows no error:\n%s", d)
	}

	// Tried anyway with the read key, the host's bridge refuses.
	st, body, _ := page.post("/host/ro/h/demo/answer", "choice=Yes")
	if st != http.StatusForbidden || !strings.Contains(body, "not_permitted") || !strings.Contains(body, "host ro") || !strings.Contains(body, "bridge grants") {
		t.Fatalf("answer through ro: %d %s", st, body)
	}
	if st, body, _ := page.post("/host/ro/h/idle/start", ""); st != http.StatusForbidden || !strings.Contains(body, "not_permitted") {
		t.Fatalf("start through ro: %d %s", st, body)
	}
	// The dead host's refusal comes at once, saying why.
	st, body, took := page.post("/host/dead/h/idle/start", "")
	if st == http.StatusOK || !strings.Contains(body, "not reachable") || took > 2*time.Second {
		t.Fatalf("start on dead: %d in %s: %s", st, took, body)
	}

	// Answered through box, the remote agent goes on.
	if st, body, _ := page.post("/host/box/h/demo/answer", "choice=Yes"); st != http.StatusOK {
		t.Fatalf("answer through box: %d %s", st, body)
	}
	remote.waitAgent("demo", "ready", "working")
	if st, body, _ := page.post("/host/box/h/idle/start", ""); st != http.StatusOK {
		t.Fatalf("start through box: %d %s", st, body)
	}
	remote.waitState("idle", "running")
	f.WaitFor("idle running on the page", 10*time.Second, func() bool {
		return strings.Contains(hostSection(fragment(), "box"), `data-name="idle" data-state="running"`)
	})
	if st, body, _ := page.post("/host/box/h/idle/stop", ""); st != http.StatusOK {
		t.Fatalf("stop through box: %d %s", st, body)
	}
	remote.waitState("idle", "stopped")

	// This daemon's audit log has the page's actions on box's rows, and
	// ro's refusal with its code; box's own log has them as its key.
	es := f.audit()
	if !hasAudit(es, "answer", "box:demo", "page", "token:operator") || !hasAudit(es, "start", "box:idle", "page", "token:operator") ||
		!slices.ContainsFunc(es, func(e auditEntry) bool {
			return e.Op == "answer" && e.Target == "ro:demo" && e.Outcome == "not_permitted"
		}) {
		t.Fatalf("the local audit log: %+v", es)
	}
	if !slices.ContainsFunc(remote.audit(), func(e auditEntry) bool { return e.Op == "start" && e.Target == "idle" && e.Actor == "ssh:writer" }) {
		t.Fatalf("box's audit log: %+v", remote.audit())
	}
	stage("answered, started, stopped")
	// box notifies: its agent waiting again reaches the local sink, once
	// (ro, the same daemon without notify, sends nothing), with commands
	// that answer it there.
	remote.waitAgent("demo", "ready")
	remote.MustRun("send", "demo", "Edit it again", "--enter")
	got := hook.waitOn(t, "/hook", "Allow edit to README.md?", 1)
	var m notifyMessage
	if err := json.Unmarshal([]byte(got[0].Body), &m); err != nil {
		t.Fatal(err)
	}
	wantCmd := fmt.Sprintf("harness --host '%s' answer demo Yes", s.Host())
	if m.Event != "waiting" || m.Harness != "box:demo" || m.Host != "box" || m.Title != "demo is waiting for you on box" ||
		!slices.ContainsFunc(m.Actions, func(a struct {
			Label   string `json:"label"`
			Command string `json:"command"`
		}) bool {
			return a.Command == wantCmd
		}) {
		t.Fatalf("box's waiting message: %s", got[0].Body)
	}
	// The message may be the first prompt's, sent before this one: the
	// agent is asked again only once it waits again.
	remote.waitAgent("demo", "waiting")
	remote.MustRun("answer", "demo", "No")
	stage("notified")

	// Still dead, and never waited on.
	if d := hostSection(fragment(), "dead"); !strings.Contains(d, `class="host-error"`) {
		t.Fatalf("dead's section:\n%s", d)
	}
	// A reload that drops ro and dead drops their sections; box stays.
	cfg, err := os.ReadFile(f.Config)
	if err != nil {
		t.Fatal(err)
	}
	kept := string(cfg[:strings.Index(string(cfg), "[host.ro]")])
	if err := os.WriteFile(f.Config, []byte(kept), 0o644); err != nil {
		t.Fatal(err)
	}
	f.MustRun("reload")
	// box's rows stay shown while it reconnects.
	f.WaitFor("ro and dead gone from the page", 10*time.Second, func() bool {
		frag := fragment()
		if hostSection(frag, "box") != "" && !strings.Contains(hostSection(frag, "box"), `data-name="demo"`) {
			t.Fatalf("box's rows went away on a reload that kept it:\n%s", hostSection(frag, "box"))
		}
		return hostSection(frag, "ro") == "" && hostSection(frag, "dead") == ""
	})
	stage("reloaded")
	if slowest > time.Second {
		t.Fatalf("the slowest fleet fragment took %s with a silent host configured", slowest)
	}
	t.Logf("slowest fleet fragment: %s", slowest)

	t.Cleanup(func() { stage("cleaned up") })
}

// TestScenario_EveryMachineInOnePageInABrowser: in a real Chromium at a
// phone's size, the page shows box's and ro's rows and dead's error, ro's
// buttons disabled; a click on box's start starts the harness there.
func TestScenario_EveryMachineInOnePageInABrowser(t *testing.T) {
	remote, _, f, _ := hostsRig(t)
	ctx := newBrowser(t, 390, 844)
	signIn(t, ctx, f.webBase(), strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token")))
	browse(t, ctx, "the hosts' sections",
		chromedp.WaitVisible(chromedp.CSS(`body[data-live="1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`section.hostgroup[data-host="box"] tr.unit[data-name="idle"] button[data-act="start"]:not([disabled])`)),
		chromedp.WaitVisible(chromedp.CSS(`section.hostgroup[data-host="ro"] tr.unit[data-name="idle"] button[data-act="start"][disabled]`)),
		chromedp.WaitVisible(chromedp.CSS(`section.hostgroup[data-host="dead"] .host-error`)),
	)
	saveScreenshotOf(t, ctx, "dashboard-hosts-390x844.png")
	browse(t, ctx, "start idle on box", clickLive(`section.hostgroup[data-host="box"] tr.unit[data-name="idle"] button[data-act="start"]`))
	remote.waitState("idle", "running")
	browse(t, ctx, "box's idle running, live",
		chromedp.WaitVisible(chromedp.CSS(`section.hostgroup[data-host="box"] tr.unit[data-name="idle"][data-state="running"]`)))
}

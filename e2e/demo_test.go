//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// environHas lists live pids whose environment holds kv exactly.
func environHas(kv string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, v := range bytes.Split(b, []byte{0}) {
			if string(v) == kv {
				var pid int
				for _, c := range e.Name() {
					pid = pid*10 + int(c-'0')
				}
				if alive(pid) {
					out = append(out, pid)
				}
				break
			}
		}
	}
	return out
}

// TestDemo_AnAgentWaitsIsAnsweredAndItsDiffIsShownThenNothingIsLeft runs
// `harness demo` as a script would (stdin not a terminal, no agent CLI,
// no network): within a minute it prints, in order, the dashboard's URL
// and a sign-in token that signs in, a pairing URL with its QR code, the
// demo agent waiting for permission with its choices and the ways to
// answer (the CLI, the page, its notification's action links), its own
// answer through the Yes link, the diff of the agent's worktree naming
// the edited file, and `harness land`, which lands it on the demo
// repository's main. The used link is then 410. Ctrl-C then leaves no
// process and no temp dir.
func TestDemo_AnAgentWaitsIsAnsweredAndItsDiffIsShownThenNothingIsLeft(t *testing.T) {
	cmd := exec.Command(harnessBin, "demo")
	cmd.Env = append(os.Environ(), "HARNESS_SOCKET=", "HARNESS_MCP_TOKEN=")
	d := startDemo(t, cmd)
	socket, _ := d.tryLines(60 * time.Second)
	text := d.output()
	at := 0
	for _, want := range []string{
		"The dashboard: http://127.0.0.1:",
		"sign in with this token (grant read, write, input): hdt_",
		"Pair a device (grant read, input; the code works once, for 10 minutes):\n  http://127.0.0.1:",
		"/pair?code=",
		"█ ▄▄▄▄▄ █", // the QR code's finder pattern, in half blocks
		"works in a git worktree of the demo repository",
		"The agent is waiting (permission): Allow edit to README.md?\n  1. Yes\n  2. No\n",
		"answer demo Yes",
		"/h/demo",
		"or a link from its notification",
		"Yes  http://127.0.0.1:",
		"No   http://127.0.0.1:",
		"answering Yes in 3s",
		"(the notification's Yes button)",
		"200 OK: answered Yes",
		"Answered: the agent is ready again.",
		"+++ b/README.md",
		"+This line was written by the harness demo agent",
		"land demo",
		"landed harness/demo on main (fast-forward)",
		"README: a line from the demo agent",
		"tools/call demo__echo -> hello through the broker",
		"export HARNESS_SOCKET=",
	} {
		i := strings.Index(text[at:], want)
		if i < 0 {
			t.Fatalf("after byte %d the demo's output lacks %q:\n%s", at, want, text)
		}
		at += i + len(want)
	}

	// The URL and token sign in, and the agent's page is there.
	base := regexp.MustCompile(`The dashboard: (http://127\.0\.0\.1:\d+)/`).FindStringSubmatch(text)[1]
	token := regexp.MustCompile(`(hdt_[0-9a-f]+)`).FindStringSubmatch(text)[1]
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	req, _ := http.NewRequest("POST", base+"/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = hc.Get(base + "/h/demo")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "demo") || strings.Contains(string(page), `id="token"`) {
		t.Fatalf("GET /h/demo after signing in: %d\n%s", resp.StatusCode, page)
	}
	// Its Turns section has the conversation from the agent's own record:
	// the task, and the edit it made once allowed.
	for _, want := range []string{"Turns · run", "Edited README.md", "edit_file"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the agent's page lacks %q in its turns:\n%s", want, page)
		}
	}
	if strings.Contains(string(page), "keeps no transcripts") {
		t.Errorf("the agent's page says it keeps no transcripts:\n%s", page)
	}

	// harness land merged the agent's edit into the repository's main.
	repo := regexp.MustCompile(`worktree of the demo repository (\S+),`).FindStringSubmatch(text)[1]
	if out, err := exec.Command("git", "-C", repo, "show", "main:README.md").CombinedOutput(); err != nil || !strings.Contains(string(out), "written by the harness demo agent") {
		t.Fatalf("the repository's main after landing: %v\n%s", err, out)
	}
	// The Yes link was used: it answers 410 now, and so does No's.
	for _, re := range []string{`Yes  (http://\S+/a/\S+)`, `No   (http://\S+/a/\S+)`} {
		link := regexp.MustCompile(re).FindStringSubmatch(text)[1]
		resp, err := http.Post(link, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusGone {
			t.Fatalf("POST %s after the answer: %d, want 410", link, resp.StatusCode)
		}
	}

	dir := filepath.Dir(socket)
	pids := descendants(d.cmd.Process.Pid)
	if len(pids) < 2 {
		t.Fatalf("found %d processes under the demo (the agent and the upstream at least)", len(pids))
	}
	if err := d.interrupt(); err != nil {
		t.Fatalf("demo exit: %v\n%s", err, d.output())
	}
	checkDemoGone(t, d, socket, dir, pids)
}

// TestDemo_SIGTERMOrAClosedTerminalWhileTheAgentWaitsLeavesNothing: the
// demo ended mid-story, while its agent waits to be answered, by SIGTERM
// or SIGHUP (its terminal closed), stops every process and removes its
// temp dir, worktree included.
func TestDemo_SIGTERMOrAClosedTerminalWhileTheAgentWaitsLeavesNothing(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(harnessBin, "demo", "--answer-after", "0")
			cmd.Env = append(os.Environ(), "HARNESS_SOCKET=", "HARNESS_MCP_TOKEN=")
			d := startDemo(t, cmd)
			sockRe := regexp.MustCompile(`reaches the same daemon with --socket (\S+)`)
			var socket string
			deadline := time.Now().Add(60 * time.Second)
			for !strings.Contains(d.output(), "Waiting for your answer") {
				if time.Now().After(deadline) {
					t.Fatalf("the demo never waited for an answer:\n%s", d.output())
				}
				time.Sleep(50 * time.Millisecond)
			}
			socket = sockRe.FindStringSubmatch(d.output())[1]
			pids := descendants(d.cmd.Process.Pid)
			if len(pids) < 2 {
				t.Fatalf("found %d processes under the demo", len(pids))
			}
			d.cmd.Process.Signal(sig)
			select {
			case err := <-d.done:
				d.done <- err
				if err != nil {
					t.Fatalf("demo exit on %v: %v\n%s", sig, err, d.output())
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("the demo did not end on %v:\n%s", sig, d.output())
			}
			checkDemoGone(t, d, socket, filepath.Dir(socket), pids)
		})
	}
}

// descendants lists the live processes under pid, from /proc.
func descendants(pid int) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold blanks and parentheses.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 {
			parent[p], _ = strconv.Atoi(f[1])
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// checkDemoGone checks that a demo that ended said so, and left none of
// its processes (counted in /proc) and not its temp dir.
func checkDemoGone(t *testing.T, d *demoRun, socket, dir string, pids []int) {
	t.Helper()
	if !strings.Contains(d.output(), "harness demo: stopped; nothing left running") {
		t.Errorf("the demo did not say it stopped:\n%s", d.output())
	}
	for _, pid := range pids {
		waitGone(t, "demo process", pid)
	}
	if left := environHas("HARNESS_SOCKET=" + socket); len(left) > 0 {
		t.Fatalf("demo processes left running: %v", left)
	}
	if left := procsLeft(func(pid int) bool {
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		return err == nil && strings.HasPrefix(cwd, dir)
	}); len(left) > 0 {
		t.Fatalf("processes still working in %s: %v", dir, left)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("demo left its temp dir %s", dir)
	}
}

// TestDemo_WithoutGitTheAgentStillAsksAndEditsInAPlainDirectory: with no
// git on PATH the demo says so and runs its agent in a plain directory,
// which the answered agent edits; nothing is left after Ctrl-C.
func TestDemo_WithoutGitTheAgentStillAsksAndEditsInAPlainDirectory(t *testing.T) {
	cmd := exec.Command(harnessBin, "demo")
	cmd.Env = envWithout([]string{"HARNESS_SOCKET", "HARNESS_MCP_TOKEN", "PATH"}, "PATH="+t.TempDir())
	d := startDemo(t, cmd)
	socket, _ := d.tryLines(60 * time.Second)
	text := d.output()
	for _, want := range []string{"no git repository (git is not on PATH)", "The agent is waiting (permission)", "answered demo: 1. Yes", "Without git there is no diff to show"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the demo's output lacks %q:\n%s", want, text)
		}
	}
	readme := filepath.Join(filepath.Dir(socket), "repo", "README.md")
	if b, err := os.ReadFile(readme); err != nil || !strings.Contains(string(b), "written by the harness demo agent") {
		t.Fatalf("%s: %v\n%s", readme, err, b)
	}
	pids := descendants(d.cmd.Process.Pid)
	if err := d.interrupt(); err != nil {
		t.Fatalf("demo exit: %v\n%s", err, d.output())
	}
	checkDemoGone(t, d, socket, filepath.Dir(socket), pids)
}

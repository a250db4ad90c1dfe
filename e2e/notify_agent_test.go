//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/agent/modelapi"
)

// TestScenario_NotifyWaitingFromARealClaudeCode: a real Claude Code (from
// npm, against the scripted model server) asks to run a command; a json,
// a slack, a discord and an ntfy receiver and a command sink each get one
// message saying it waits, with the command, the choices and the answer
// command, and nothing of its API key; the answer runs the command; a
// different prompt inside the cooldown is sent too, the first prompt
// again is counted, not sent.
func TestScenario_NotifyWaitingFromARealClaudeCode(t *testing.T) {
	r := newHookReceiver(t)
	out := filepath.Join(t.TempDir(), "command-sink.json")
	table, rc := claudeTable(t, "claude", "")
	config := table
	formats := []string{"json", "slack", "discord", "ntfy"}
	for _, format := range formats {
		config += fmt.Sprintf("\n[notify.%[1]s]\nurl = \"%[2]s/%[1]s\"\nformat = \"%[1]s\"\non = [\"waiting\"]\ncooldown_s = 3600\n", format, r.URL)
	}
	config += fmt.Sprintf("\n[notify.cmd]\ncommand = [\"sh\", \"-c\", \"cat > %s\"]\non = [\"waiting\"]\ncooldown_s = 3600\n", out)
	f := newFleet(t, config)

	w := rc.askForPermission(f, "made-by-notify")
	const answer = "harness answer claude Yes"
	for _, format := range formats {
		got := r.waitOn(t, "/"+format, "touch made-by-notify", 1)
		body := got[0].Body
		if len(got) != 1 {
			t.Errorf("%s: %d messages", format, len(got))
		}
		switch format {
		case "json":
			var m notifyMessage
			if err := json.Unmarshal([]byte(body), &m); err != nil {
				t.Fatalf("json: %v: %s", err, body)
			}
			if m.Event != "waiting" || m.Harness != "claude" || !strings.Contains(m.Prompt, "touch made-by-notify") ||
				!slices.Equal(m.Choices, w.Choices) || len(m.Actions) == 0 || m.Actions[0].Command != answer {
				t.Errorf("json message: %+v", m)
			}
		case "ntfy":
			if !strings.HasPrefix(got[0].Header.Get("Title"), "claude is waiting for you") || !strings.Contains(body, answer) {
				t.Errorf("ntfy: %v %s", got[0].Header, body)
			}
		default:
			if !strings.Contains(body, answer) || !strings.Contains(body, "claude is waiting for you") {
				t.Errorf("%s: %s", format, body)
			}
		}
		if strings.Contains(body, modelapi.TestKey) || strings.Contains(fmt.Sprint(got[0].Header), modelapi.TestKey) {
			t.Errorf("%s: the message carries Claude Code's API key: %s", format, body)
		}
	}
	var cmdMsg notifyMessage
	f.WaitFor("the command sink's message", 30*time.Second, func() bool {
		b, err := os.ReadFile(out)
		return err == nil && json.Unmarshal(b, &cmdMsg) == nil
	})
	if cmdMsg.Event != "waiting" || !strings.Contains(cmdMsg.Prompt, "touch made-by-notify") || cmdMsg.Actions[0].Command != answer {
		t.Errorf("command sink: %+v", cmdMsg)
	}
	if b, _ := os.ReadFile(out); strings.Contains(string(b), modelapi.TestKey) {
		t.Errorf("the command sink's message carries Claude Code's API key: %s", b)
	}

	// The message's own command answers it.
	f.MustRun(strings.Fields(answer)[1:]...)
	f.waitAgent("claude", "ready")
	if _, err := os.Stat(filepath.Join(rc.work, "made-by-notify")); err != nil {
		t.Fatalf("the answered command did not run: %v", err)
	}

	// A different prompt inside cooldown_s is news: sent.
	rc.askForPermission(f, "made-again")
	for _, format := range formats {
		r.waitOn(t, "/"+format, "touch made-again", 1)
	}
	f.MustRun(strings.Fields(answer)[1:]...) // the script's next turn follows a yes
	f.waitAgent("claude", "ready")
	// The first prompt again inside cooldown_s: counted, not sent.
	rc.askForPermission(f, "made-by-notify")
	f.WaitFor("the same prompt again to be suppressed", 30*time.Second, func() bool {
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
	f.MustRun("answer", "claude", "No")
	logText, _ := os.ReadFile(f.LogPath)
	if strings.Contains(string(logText), modelapi.TestKey) {
		t.Error("the daemon's log carries Claude Code's API key")
	}
}

// TestScenario_NotifyHeldOutsideItsHours: a harness whose hours do not
// include now is held; a notify table on held gets one message with the
// reason, until when, and how to start it anyway.
func TestScenario_NotifyHeldOutsideItsHours(t *testing.T) {
	r := newHookReceiver(t)
	now := time.Now()
	hours := now.Add(2*time.Hour).Format("15:04") + "-" + now.Add(3*time.Hour).Format("15:04")
	f := newFleet(t, fmt.Sprintf(`
[harness.office]
cmd = "sleep"
args = ["3600"]
enabled = true
hours = %q

[notify.json]
url = "%s/json"
format = "json"
on = ["held"]
`, hours, r.URL))
	got := r.waitOn(t, "/json", `"event":"held"`, 1)
	var m struct {
		notifyMessage
		Until *time.Time `json:"until"`
	}
	if err := json.Unmarshal([]byte(got[0].Body), &m); err != nil {
		t.Fatal(err)
	}
	if m.Harness != "office" || !strings.Contains(m.Reason, "hours") || m.Until == nil || len(m.Actions) < 2 ||
		m.Actions[1].Command != "harness start office --force" {
		t.Errorf("held message: %s", got[0].Body)
	}
	if u := f.unit("office"); u.State == "running" {
		t.Errorf("a harness outside its hours runs")
	}
}

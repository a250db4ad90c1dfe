//go:build interop

package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/term"
)

// Typing into a terminal, with a real agent from npm: Gemini CLI 0.61.0 (pinned in
// tui/package-lock.json, installed by scripts/test) stops at a
// folder-trust dialog on its first start; `harness send` and the
// harness_send tool of an MCP session granted input answer it, and its
// next dialog (how to authenticate) shows. It runs offline, in a fresh
// HOME, as TUI_FINDINGS describes.

// geminiTable is a harness running Gemini CLI in its own HOME and work
// directory under dir, and the HOME (for the processes check).
func geminiTable(t *testing.T, name, dir string) (string, string) {
	t.Helper()
	home, work := filepath.Join(dir, name+"-home"), filepath.Join(dir, "work-"+name)
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return fmt.Sprintf("\n[harness.%s]\ncmd = %q\nworkdir = %q\nenv = %s\nstop_grace = 3\n",
		name, tuiBin(t, "gemini"), work, tuiEnv(home)), home
}

// tokenTable is a harness that only writes its MCP token for the test's
// MCP client to present, granted allow.
func tokenTable(name, dir, allow string) string {
	return fmt.Sprintf("\n[harness.%s]\ncmd = \"sh\"\nargs = [\"-c\", %q]\nenabled = true\nmcp_allow = %s\n",
		name, "echo $HARNESS_MCP_TOKEN > "+filepath.Join(dir, name+".token")+"; exec sleep 100000", allow)
}

func readToken(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) >= 32 {
			return string(bytes.TrimSpace(b))
		}
		if time.Now().After(deadline) {
			t.Fatalf("no token in %s", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// screenOf is what the daemon's emulator shows of name: a read-only
// viewer's repaint (the first output of an attach stream), replayed on a
// terminal of the same size.
func (f *fleet) screenOf(name string) []string {
	f.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, err := client.DialAttach(ctx, f.Socket, api.AttachArgs{Name: name, ReadOnly: true})
	if err != nil {
		f.T.Fatalf("attach %s: %v", name, err)
	}
	defer a.Close()
	_, ev, err := a.Recv()
	if err != nil || ev == nil || ev.Kind != api.AttachAttached {
		f.T.Fatalf("attach %s: first frame %+v, %v", name, ev, err)
	}
	out, _, err := a.Recv()
	if err != nil {
		f.T.Fatalf("attach %s: repaint: %v", name, err)
	}
	em := term.New(term.Options{Cols: ev.Cols, Rows: ev.Rows})
	defer em.Close()
	em.Feed(out)
	return em.Snapshot(term.SnapshotOptions{}).Lines
}

// waitScreen re-reads the screen whenever the harness's output turns busy
// or idle (the event subscription), until it shows every one of want and
// none of gone; after two minutes it fails with the last screen.
func (f *fleet) waitScreen(events <-chan api.Event, name string, want []string, gone ...string) []string {
	f.T.Helper()
	deadline := time.After(2 * time.Minute)
	var last []string
	for {
		last = f.screenOf(name)
		text := strings.Join(last, "\n")
		shown := func(w string) bool { return strings.Contains(text, w) }
		if !slices.ContainsFunc(want, func(w string) bool { return !shown(w) }) && !slices.ContainsFunc(gone, shown) {
			return last
		}
		select {
		case <-events:
		case <-time.After(2 * time.Second): // an idle screen sends no more events
		case <-deadline:
			f.T.Fatalf("%s never showed %q without %q; last screen:\n%s\ndaemon log:\n%s", name, want, gone, text, f.Log())
		}
	}
}

// subscribe returns the daemon's events of name.
func (f *fleet) subscribe(name string) <-chan api.Event {
	f.T.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f.T.Cleanup(cancel)
	c, err := client.Dial(ctx, f.Socket)
	if err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(func() { c.Close() })
	all, err := c.Subscribe(ctx)
	if err != nil {
		f.T.Fatal(err)
	}
	out := make(chan api.Event, 64)
	go func() {
		for ev := range all {
			if ev.Unit == name {
				select {
				case out <- ev:
				default: // a wake-up is pending already
				}
			}
		}
	}()
	return out
}

// noneLeftWith fails if a process still runs with env entry kv (a
// harness's HOME): Gemini relaunches itself as a child node process.
func noneLeftWith(t *testing.T, kv string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []int
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err == nil && slices.Contains(strings.Split(string(env), "\x00"), kv) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes with %s still running after the daemon stopped: %v", kv, left)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const (
	trustDialog = "Do you trust the files in this folder?"
	authDialog  = "How would you like to authenticate for this project?"
)

// TestScenario_SendAnswersGeminisTrustDialog: `harness send gemini --key
// Enter` trusts the folder (the dialog's first choice) and Gemini moves on
// to its authentication dialog; the same through harness_send of a
// TypeScript SDK session granted input, whose refusals carry their codes;
// a session granted read and write does not see harness_send and is
// refused.
func TestScenario_SendAnswersGeminisTrustDialog(t *testing.T) {
	dir := t.TempDir()
	gemA, homeA := geminiTable(t, "gemini", dir)
	gemB, homeB := geminiTable(t, "gemini2", dir)
	t.Cleanup(func() { noneLeftWith(t, "HOME="+homeA); noneLeftWith(t, "HOME="+homeB) }) // after the daemon stops
	// A stdio upstream of the npm memory server, which has no terminal.
	up := fmt.Sprintf("\n[mcp.memory]\ncmd = %q\nenv = { MEMORY_FILE_PATH = %q }\n", bin("mcp-server-memory"), filepath.Join(dir, "memory.json"))
	f := newFleet(t, gemA+gemB+tokenTable("ops", dir, `["read", "input"]`)+tokenTable("rw", dir, `["read", "write"]`)+up)
	evA, evB := f.subscribe("gemini"), f.subscribe("gemini2")
	for _, name := range []string{"gemini", "gemini2"} {
		if _, errOut, code := f.Run("start", name); code != 0 {
			t.Fatalf("start %s: %s", name, errOut)
		}
	}

	// The CLI.
	f.waitScreen(evA, "gemini", []string{trustDialog, "1. Trust folder (work-gemini)"})
	if out, errOut, code := f.Run("send", "gemini", "--key", "Enter"); code != 0 || !strings.Contains(out, "sent 1 bytes to gemini") {
		t.Fatalf("harness send: exit %d: %s%s", code, out, errOut)
	}
	// While Gemini restarts itself the new dialog is drawn under the old
	// one for a moment; then the old one goes.
	f.waitScreen(evA, "gemini", []string{authDialog, "1. Sign in with Google"}, trustDialog)

	// The TypeScript SDK client, through `harness mcp` with a harness's token.
	f.waitScreen(evB, "gemini2", []string{trustDialog})
	bridge := func(tokenOf string) map[string]any {
		tr := f.bridge()
		tr["env"] = map[string]string{"HARNESS_SOCKET": "", "HARNESS_MCP_TOKEN": readToken(t, filepath.Join(dir, tokenOf+".token"))}
		return tr
	}
	c, steps := runTS(t,
		connectStep("in", bridge("ops")),
		opStep("in", "listTools"),
		opStep("in", "callTool", "name", "harness_send", "args", map[string]any{"name": "ops2"}),
		opStep("in", "callTool", "name", "harness_send", "args", map[string]any{"name": "gemini2", "keys": []string{"F13"}}),
		opStep("in", "callTool", "name", "harness_send", "args", map[string]any{"name": "mcp.memory", "text": "x"}),
		opStep("in", "callTool", "name", "harness_send", "args", map[string]any{"name": "gemini2", "keys": []string{"Enter"}}),
		connectStep("rw", bridge("rw")),
		opStep("rw", "listTools"),
		opStep("rw", "callTool", "name", "harness_send", "args", map[string]any{"name": "gemini2", "keys": []string{"Down"}}),
	)
	names := func(s step) []string {
		var listed struct{ Tools []tool }
		c.must(s, &listed)
		var out []string
		for _, tl := range listed.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	if got := names(steps[1]); !slices.Contains(got, "harness_send") || slices.Contains(got, "harness_stop") {
		t.Fatalf("a session granted read and input lists %v", got)
	}
	if got := names(steps[7]); slices.Contains(got, "harness_send") {
		t.Fatalf("a session granted read and write lists harness_send: %v", got)
	}
	for i, want := range map[int]string{2: "unknown_harness", 3: "invalid_argument", 4: "invalid_argument", 8: "not_permitted"} {
		var r toolResult
		c.must(steps[i], &r)
		var body struct {
			Code string `json:"code"`
		}
		if !r.IsError || json.Unmarshal(r.StructuredContent, &body) != nil || body.Code != want {
			t.Errorf("step %d: isError %v, %s, want code %s\n%s", i, r.IsError, r.StructuredContent, want, c.transcript())
		}
	}
	var sent toolResult
	c.must(steps[5], &sent)
	var res api.SendResult
	if sent.IsError || json.Unmarshal(sent.StructuredContent, &res) != nil || res.Name != "gemini2" || res.Bytes != 1 {
		t.Fatalf("harness_send Enter to gemini2: %s\n%s", sent.StructuredContent, c.transcript())
	}
	f.waitScreen(evB, "gemini2", []string{authDialog}, trustDialog)

	// A stopped harness is not_running for the same session.
	f.Run("stop", "gemini")
	_, steps = runTS(t,
		connectStep("in", bridge("ops")),
		opStep("in", "callTool", "name", "harness_send", "args", map[string]any{"name": "gemini", "keys": []string{"Enter"}}),
	)
	var r toolResult
	if err := json.Unmarshal(steps[1].Result, &r); err != nil || !r.IsError || !strings.Contains(string(r.StructuredContent), `"not_running"`) {
		t.Fatalf("harness_send to a stopped harness: %s", steps[1].Result)
	}
}

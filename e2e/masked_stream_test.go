//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

var pageCSRF = regexp.MustCompile(`name="csrf-token" content="([0-9a-f]+)"`)

// terminalBytes signs in with token, opens name's terminal on the
// dashboard and returns every binary byte it sends until done says so
// (bounded by within).
func terminalBytes(t *testing.T, base, token, name string, within time.Duration, done func(got []byte, frames int) bool) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	c := freshClient()
	if st, err := dashSignIn(ctx, c, base, token); err != nil || st != http.StatusSeeOther {
		t.Fatalf("sign-in = %d, %v", st, err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/h/"+name, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := pageCSRF.FindSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on /h/%s (%d)", name, resp.StatusCode)
	}
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/h/"+name+"/attach", &websocket.DialOptions{HTTPClient: c})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(8 << 20)
	hello, _ := json.Marshal(map[string]any{"csrf": string(m[1]), "cols": 100, "rows": 30})
	if err := ws.Write(ctx, websocket.MessageText, hello); err != nil {
		t.Fatal(err)
	}
	var got []byte
	frames := 0
	for !done(got, frames) {
		typ, data, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("terminal of %s after %d frames (%d bytes): %v", name, frames, len(got), err)
		}
		if typ == websocket.MessageBinary {
			got = append(got, data...)
			frames++
		}
	}
	return got
}

// TestScenario_AReadOnlyViewerNeverGetsTheSecretATerminalPrints: `screen`
// masked an env_file value while a read-only dashboard viewer got the
// program's bytes, secret and all. A viewer without the input grant now
// gets the screen as `screen` shows it, masked, even when the program
// prints the value in two writes; a viewer with input keeps the raw bytes.
func TestScenario_AReadOnlyViewerNeverGetsTheSecretATerminalPrints(t *testing.T) {
	dir := t.TempDir()
	secret := fmt.Sprintf("env-value-%d", time.Now().UnixNano())
	envFile := filepath.Join(dir, "leaky.env")
	if err := os.WriteFile(envFile, []byte("LEAK="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The value goes out in two writes, a moment apart, every 200 ms.
	script := `i=0; while :; do i=$((i+1)); printf 'tick %d env says %s' "$i" "${LEAK%????}"; sleep 0.05; printf '%s\n' "${LEAK#"${LEAK%????}"}"; sleep 0.2; done`
	f := newFleet(t, fmt.Sprintf(`
[daemon]
mcp_http = "127.0.0.1:0"

[harness.leaky]
cmd = "sh"
args = ["-c", %q]
env_file = %q
`, script, envFile))
	base := strings.TrimSuffix(f.mcpURL(), "/mcp")
	f.MustRun("start", "leaky")
	f.WaitFor("leaky's screen", 20*time.Second, func() bool {
		return strings.Contains(f.MustRun("screen", "leaky"), "tick 2 ")
	})
	reader := strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token", "--dashboard", "--grant", "read"))
	typist := strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token", "--dashboard", "--grant", "read,input"))

	// The read-only viewer: the first repaint and live repaints after it,
	// over several of the program's prints.
	const frames = 6
	got := terminalBytes(t, base, reader, "leaky", 20*time.Second, func(_ []byte, n int) bool { return n >= frames })
	if bytes.Contains(got, []byte(secret)) {
		t.Fatalf("the read-only viewer's %d bytes carry the env_file value", len(got))
	}
	if !bytes.Contains(got, []byte("env says [masked]")) {
		t.Fatalf("the read-only viewer's bytes show no masked value: %q", got)
	}
	// Not even its beginning, shown between the program's two writes.
	if bytes.Contains(got, []byte(secret[:len(secret)-4])) {
		t.Fatalf("the read-only viewer's bytes carry the value's beginning: %q", got)
	}
	t.Logf("read-only viewer: %d frames, %d bytes, %d [masked], no secret", frames, len(got), bytes.Count(got, []byte("[masked]")))

	// The viewer with input: the program's bytes, the value as printed.
	raw := terminalBytes(t, base, typist, "leaky", 20*time.Second, func(got []byte, _ int) bool {
		return bytes.Count(got, []byte(secret)) >= 2
	})
	if bytes.Contains(raw, []byte("[masked]")) {
		t.Fatalf("the input viewer's raw bytes were masked")
	}
	f.MustRun("stop", "leaky")
}

//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// peakRSSKiB is the daemon's peak resident set (VmHWM).
func peakRSSKiB(t *testing.T, pid int) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return n
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// An MCP message over [daemon] mcp_max_message_bytes is answered with a
// clear error and skipped, never read into memory, and the session goes
// on (eight parallel 15 MB arguments had peaked the daemon at 773 MB:
// about six times what it read; four 4 MB ones read whole would cost
// some 96 MB, and the bound here is a third of that).
func TestMCP_OversizedMessagesAreRefusedWithoutBeingRead(t *testing.T) {
	f := newFleet(t, "[daemon]\nmcp_max_message_bytes = 1048576\nmcp_http = \"127.0.0.1:0\"\n"+sleeperConfig)
	var info struct {
		PID    int    `json:"pid"`
		MCPURL string `json:"mcp_url"`
	}
	f.MustJSON(&info, "daemon-info")
	before := peakRSSKiB(t, info.PID)

	big := strings.Repeat("x", 4<<20)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		s := f.mcpSession("", false, nil)
		wg.Go(func() {
			_, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "harness_describe", Arguments: map[string]any{"name": big}})
			var rpc *jsonrpc.Error
			if !errors.As(err, &rpc) || rpc.Code != -32600 || !strings.Contains(rpc.Message, "exceeds this session's limit of 1048576 bytes") {
				t.Errorf("a 4 MB call: %v", err)
			}
			// The session goes on.
			if res := callTool(t, s, "harness_describe", map[string]any{"name": "sleeper"}); res.IsError {
				t.Errorf("the next call: %s", text(t, res))
			}
		})
	}
	wg.Wait()
	grew := peakRSSKiB(t, info.PID) - before
	t.Logf("the daemon's peak RSS grew by %d KiB refusing 4 x 4 MB messages", grew)
	if grew > 32<<10 {
		t.Errorf("the daemon's peak RSS grew by %d KiB reading 4 x 4 MB messages it refuses", grew)
	}

	// Over HTTP: 413 saying the limit.
	req, _ := http.NewRequest(http.MethodPost, info.MCPURL, strings.NewReader(big[:2<<20]))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token")))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 512)
	n, _ := resp.Body.Read(body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body[:n]), "mcp_max_message_bytes") {
		t.Errorf("HTTP POST of 2 MB: %d %s", resp.StatusCode, body[:n])
	}
}

// A limit raised over the go-sdk's own 4 MiB default applies over HTTP
// too: a 5 MiB call reaches the tool (its answer says the harness is
// unknown, clipped), where the SDK would have refused it with 413.
func TestMCP_RaisedMessageLimitAppliesOverHTTP(t *testing.T) {
	f := newFleet(t, "[daemon]\nmcp_max_message_bytes = 8388608\nmcp_http = \"127.0.0.1:0\"\n"+sleeperConfig)
	s := httpSession(t, f.mcpURL(), strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token")))
	big := strings.Repeat("x", 5<<20)
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "harness_describe", Arguments: map[string]any{"name": big}})
	if err != nil {
		t.Fatalf("a 5 MiB call under an 8 MiB limit: %v", err)
	}
	if code := errorCode(t, res); code != "unknown_harness" {
		t.Fatalf("a 5 MiB call under an 8 MiB limit answered %q: %s", code, errcode.Clip(text(t, res), 300))
	}
}

// A session whose client went away (its bridge killed, or its pipes
// closed) while a call hangs upstream is ended and the call cancelled
// upstream within about a second, in both bridge modes (such
// sessions lived forever and their calls were never cancelled).
func TestMCP_ClientGoneCancelsItsCallsUpstream(t *testing.T) {
	for _, mode := range bridgeModes {
		for _, how := range []string{"bridge killed", "pipes closed"} {
			t.Run(mode.name+"/"+how, func(t *testing.T) {
				f := newFleet(t, upstreamTable("x", "gone-"+mode.name+"-"+strings.ReplaceAll(how, " ", "-"), ""))
				probe := f.mcpSession("", false, nil)
				waitTool(t, f, probe, "x__slow")
				b := startBridge(t, f.Socket, mode.env)
				b.initialize()
				b.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x__slow","arguments":{"ms":600000},"_meta":{"progressToken":"p1"}}}`)
				// The upstream's progress notification says the call is in flight.
				if got := b.line(); !strings.Contains(got, "notifications/progress") {
					t.Fatalf("want the call's progress first, got %q", got)
				}
				switch how {
				case "bridge killed":
					if err := b.cmd.Process.Kill(); err != nil {
						t.Fatal(err)
					}
				case "pipes closed":
					b.inW.Close()
					b.outR.Close()
				}
				begin := time.Now()
				f.WaitFor("the upstream to count the cancellation", 10*time.Second, func() bool {
					return strings.TrimSpace(text(t, callTool(t, probe, "x__cancelled", nil))) == "1"
				})
				if took := time.Since(begin); took > 3*time.Second {
					t.Errorf("the call was cancelled %s after its client left, want about a second", took.Round(time.Millisecond))
				}
			})
		}
	}
}

// Per MCP, no response is due after a client cancelled its request: the
// session sends none (it answered internal before), cancels the
// call upstream, and goes on; in both bridge modes.
func TestMCP_CancelledCallGetsNoAnswer(t *testing.T) {
	for _, mode := range bridgeModes {
		t.Run(mode.name, func(t *testing.T) {
			f := newFleet(t, upstreamTable("x", "cancel-answer-"+mode.name, ""))
			probe := f.mcpSession("", false, nil)
			waitTool(t, f, probe, "x__slow")
			b := startBridge(t, f.Socket, mode.env)
			b.initialize()
			b.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x__slow","arguments":{"ms":600000},"_meta":{"progressToken":"p1"}}}`)
			if got := b.line(); !strings.Contains(got, "notifications/progress") {
				t.Fatalf("want the call's progress first, got %q", got)
			}
			b.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"changed my mind"}}`)
			f.WaitFor("the upstream to count the cancellation", 10*time.Second, func() bool {
				return strings.TrimSpace(text(t, callTool(t, probe, "x__cancelled", nil))) == "1"
			})
			b.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
			if got := b.line(); !strings.Contains(got, `"id":2,"result"`) {
				t.Fatalf("after the cancellation the session sent %q, want only the ping's answer", got)
			}
			b.inW.Close()
			if code := b.exit(10 * time.Second); code != 0 {
				t.Fatalf("harness mcp exit %d after stdin closed (stderr %q)", code, b.stderr())
			}
		})
	}
}

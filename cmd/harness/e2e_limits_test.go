package main

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
// on (issue 22: eight parallel 15 MB arguments had peaked the daemon at
// 773 MB).
func TestMCP_OversizedMessagesAreRefusedWithoutBeingRead(t *testing.T) {
	f := newFleet(t, "[daemon]\nmcp_max_message_bytes = 1048576\nmcp_http = \"127.0.0.1:0\"\n"+sleeperConfig)
	var info struct {
		PID    int    `json:"pid"`
		MCPURL string `json:"mcp_url"`
	}
	f.mustJSON(&info, "daemon-info")
	before := peakRSSKiB(t, info.PID)

	big := strings.Repeat("x", 6<<20)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		s := f.mcpSession("", false, nil)
		wg.Go(func() {
			_, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "harness_describe", Arguments: map[string]any{"name": big}})
			var rpc *jsonrpc.Error
			if !errors.As(err, &rpc) || rpc.Code != -32600 || !strings.Contains(rpc.Message, "exceeds this session's limit of 1048576 bytes") {
				t.Errorf("a 6 MB call: %v", err)
			}
			// The session goes on.
			if res := callTool(t, s, "harness_describe", map[string]any{"name": "sleeper"}); res.IsError {
				t.Errorf("the next call: %s", text(t, res))
			}
		})
	}
	wg.Wait()
	if grew := peakRSSKiB(t, info.PID) - before; grew > 100<<10 {
		t.Errorf("the daemon's peak RSS grew by %d KiB reading 8 x 6 MB messages it refuses", grew)
	}

	// Over HTTP: 413 saying the limit.
	req, _ := http.NewRequest(http.MethodPost, info.MCPURL, strings.NewReader(big[:2<<20]))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(f.mustRun("--state-dir", f.state, "mcp", "token")))
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

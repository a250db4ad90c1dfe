//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// raiseNoFile makes sure this test process may hold n descriptors.
func raiseNoFile(t *testing.T, n uint64) {
	t.Helper()
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= n {
		return
	}
	lim.Cur = n
	lim.Max = max(lim.Max, n) // raising the hard limit needs root, which CI is
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("this test holds %d connections; raising RLIMIT_NOFILE to %d: %v", n/2, n, err)
	}
}

// runWithin runs a CLI verb and fails the test if it does not finish within d.
func (f *fleet) runWithin(d time.Duration, args ...string) (string, time.Duration) {
	f.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	c := exec.CommandContext(ctx, harnessBin, append([]string{"--socket", f.Socket}, args...)...)
	c.Env = append(os.Environ(), "HARNESS_SOCKET=", "HARNESS_MCP_TOKEN=")
	start := time.Now()
	out, err := c.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		f.T.Fatalf("harness %v after %v: %v\n%s", args, took.Round(time.Millisecond), err, out)
	}
	return string(out), took
}

// TestScenario_CLIAnswersWhile1000IdleHTTPConnectionsAreOpen: a fault
// campaign found that unauthenticated keep-alive connections were never
// closed; 110 of them after a 401 exhausted the daemon's descriptors and
// `harness list` timed out. The daemon here runs with 512
// descriptors, as tight as that campaign's; 1,000 refused connections, then
// 1,000 that never speak, must leave the CLI and the HTTP door working.
func TestScenario_CLIAnswersWhile1000IdleHTTPConnectionsAreOpen(t *testing.T) {
	const n = 1000
	raiseNoFile(t, 2*n+512)
	f := newFleet(t, "[daemon]\nmcp_http = \"127.0.0.1:0\"\n")
	u, err := url.Parse(f.mcpURL())
	if err != nil {
		t.Fatal(err)
	}
	pid := f.Cmd.Process.Pid
	limitNoFileOf(t, pid, 512)
	op := strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token"))
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"idle","version":"1"}}}`
	refused := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", u.Host, len(body), body)

	dial := func(send string) []net.Conn {
		conns := make([]net.Conn, 0, n)
		for range n {
			c, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
			if err != nil {
				t.Fatalf("dial %d: %v", len(conns), err)
			}
			conns = append(conns, c)
			if send != "" {
				if _, err := io.WriteString(c, send); err != nil {
					t.Fatal(err)
				}
			}
		}
		t.Cleanup(func() {
			for _, c := range conns {
				c.Close()
			}
		})
		return conns
	}

	// 1,000 clients that sent an unauthenticated request and would keep
	// their connection idle forever.
	conns := dial(refused)
	if out, took := f.runWithin(10*time.Second, "list", "--json"); took > 5*time.Second || !strings.HasPrefix(strings.TrimSpace(out), "[") {
		t.Fatalf("harness list with %d refused connections open: %v, %q", n, took, out)
	}
	// Each was answered 401 and then closed by the daemon.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var kept []string
	for i, c := range conns {
		wg.Go(func() {
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				_, err = br.ReadByte()
			}
			if !errors.Is(err, io.EOF) || resp == nil || resp.StatusCode != http.StatusUnauthorized {
				mu.Lock()
				kept = append(kept, fmt.Sprintf("conn %d: %v %v", i, resp, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(kept) > 0 {
		t.Fatalf("%d connections not refused and closed, first: %s", len(kept), kept[0])
	}
	if s := initializeStatus(t, u.String(), op, ""); s != http.StatusOK {
		t.Fatalf("operator initialize after the refused connections: %d", s)
	}

	// 1,000 more that never send a byte: the door holds at most its cap of
	// them (the rest wait in the kernel's backlog), so the daemon keeps
	// descriptors for its socket.
	dial("")
	if out, took := f.runWithin(10*time.Second, "list", "--json"); took > 5*time.Second || !strings.HasPrefix(strings.TrimSpace(out), "[") {
		t.Fatalf("harness list with %d silent connections open: %v, %q", n, took, out)
	}
	if fds := openFDs(t, pid); fds > 400 {
		t.Fatalf("the daemon holds %d descriptors with %d silent connections open", fds, n)
	}
	// And a real client is served at once: silent connections make way
	// (it waited behind them for over 20 s).
	start := time.Now()
	if s := initializeStatus(t, u.String(), op, ""); s != http.StatusOK {
		t.Fatalf("operator initialize with %d silent connections open: %d", n, s)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("a client waited %v behind %d silent connections", took, n)
	} else {
		t.Logf("a client was served in %v with %d silent connections open", took, n)
	}
}

// TestScenario_SSHTunnelReachesTheHTTPEndpoint: `ssh -L 9000:127.0.0.1:7330`
// forwards the bytes unchanged, so the daemon sees Host localhost:9000. The
// endpoint used to pin its own port and answer 403; a loopback name on any
// port is accepted now, and a foreign name is still refused.
func TestScenario_SSHTunnelReachesTheHTTPEndpoint(t *testing.T) {
	f := newFleet(t, "[daemon]\nmcp_http = \"127.0.0.1:0\"\n")
	u, err := url.Parse(f.mcpURL())
	if err != nil {
		t.Fatal(err)
	}
	tunnel := forwardTCP(t, u.Host)
	op := strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token"))

	_, port, _ := net.SplitHostPort(tunnel)
	via := "http://localhost:" + port + "/mcp"
	if got := toolNames(t, httpSession(t, via, op)); !slices.Equal(got, readTools) {
		t.Fatalf("through the tunnel: %v", got)
	}
	if s := initializeStatus(t, via, op, "evil.example:"+port); s != http.StatusForbidden {
		t.Fatalf("foreign Host through the tunnel: %d, want 403", s)
	}
}

// forwardTCP listens on a free loopback port and copies every connection's
// bytes both ways to target, as `ssh -L` does.
func forwardTCP(t *testing.T, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			wg.Go(func() { io.Copy(out, in); out.Close() })
			wg.Go(func() { io.Copy(in, out); in.Close() })
		}
	})
	return ln.Addr().String()
}

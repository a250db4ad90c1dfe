package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path (h) of part 1, the floor under (c): the go-sdk client's HTTP
// requests reach, in the daemon's place, an HTTP server of the bench's
// that hands each request's body to an upstream process's stdin as it is
// and answers with the upstream's line, as application/json: no MCP work,
// no session, one light parse to tell a call (which waits for its answer)
// from a notification (202). (h) - (a) is what HTTP itself costs the
// client and the path; (c) - (h) is what the daemon adds. One session
// only: the relay cannot tell two clients' ids apart without rewriting
// them.

// httpRelay is a -serve-http-relay process.
type httpRelay struct {
	cmd    *exec.Cmd
	exited chan struct{}
	url    string
}

// startHTTPRelay runs this program in -serve-http-relay mode for an
// upstream of kind and reads the URL it serves.
func startHTTPRelay(ctx context.Context, bin, kind string) (*httpRelay, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	r := &httpRelay{exited: make(chan struct{})}
	r.cmd = exec.Command(exe, "-serve-http-relay", bin, kind)
	r.cmd.Stderr = os.Stderr
	r.cmd.SysProcAttr = dieWithParent()
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := r.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = r.cmd.Wait(); close(r.exited) }()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case r.url = <-line:
	case <-r.exited:
		return nil, errors.New("http relay exited early")
	case <-ctx.Done():
		r.close()
		return nil, ctx.Err()
	case <-time.After(10 * time.Second):
		r.close()
		return nil, errors.New("http relay printed no URL")
	}
	if r.url == "" {
		r.close()
		return nil, errors.New("http relay printed no URL")
	}
	return r, nil
}

func (r *httpRelay) pid() int { return r.cmd.Process.Pid }

func (r *httpRelay) close() { stopChild(r.cmd, r.exited, 10*time.Second) }

// session connects a go-sdk client to the relay over Streamable HTTP, at
// the version the client negotiates, as path (c) does.
func (r *httpRelay) session(ctx context.Context) (*mcp.ClientSession, error) {
	cl := mcp.NewClient(&mcp.Implementation{Name: "bench-http-relay", Version: "1"}, nil)
	return cl.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   r.url,
		HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}},
		MaxRetries: -1,
	}, nil)
}

// serveHTTPRelay is the -serve-http-relay mode: HARNESS-BINARY UPSTREAM-KIND.
// It prints its URL and serves until it is killed.
func serveHTTPRelay(args []string) error {
	if len(args) != 2 {
		return errors.New("usage: -serve-http-relay HARNESS-BINARY UPSTREAM-KIND")
	}
	up, err := upstreamOf(args[1])
	if err != nil {
		return err
	}
	name, uargs, err := up.cmd(args[0], fmt.Sprintf("bench-http-relay-up-%d", os.Getpid()))
	if err != nil {
		return err
	}
	cmd := exec.Command(name, uargs...)
	cmd.SysProcAttr = dieWithParent()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	rel := &relayUpstream{in: stdin, out: bufio.NewReaderSize(stdout, 64<<10)}
	return http.Serve(ln, rel)
}

// relayUpstream hands HTTP bodies to one upstream's stdio, one call at a
// time.
type relayUpstream struct {
	mu  sync.Mutex
	in  io.Writer
	out *bufio.Reader
}

func (u *relayUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &m) != nil {
		http.Error(w, "not a JSON-RPC message", http.StatusBadRequest)
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, err := u.in.Write(append(body, '\n')); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if m.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	for {
		line, err := u.out.ReadBytes('\n')
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		var resp struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &resp) == nil && resp.Method == "" && string(resp.ID) == string(m.ID) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(line)
			return
		}
	}
}

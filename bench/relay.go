package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/nowait"
	"github.com/harness-dev/harness/internal/protocol"
)

// The relay is path (r) of part 1, the floor under path (b): the same
// processes in the same order (client -> `harness mcp` -> a process on the
// control socket -> upstream) but the middle one only copies bytes, with no
// JSON-RPC or MCP work, and runs one upstream per session (it cannot
// multiplex without parsing). (b) - (r) is what the daemon's MCP handling
// adds; (r) - (a) is what two more processes on the path cost. Path (r')
// is the same relay taking the client's stdio by hand-off, the floor under
// (b'): one more process on the path than (a).

// benchRelay is a relay process serving one socket.
type benchRelay struct {
	socket string
	cmd    *exec.Cmd
	exited chan struct{}
	n      atomic.Int64
	bin    string
}

// startRelay runs this program in -serve-relay mode on a socket in dir.
func startRelay(ctx context.Context, bin, kind, dir string) (*benchRelay, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	r := &benchRelay{socket: filepath.Join(dir, "relay.sock"), exited: make(chan struct{}), bin: bin}
	r.cmd = exec.Command(exe, "-serve-relay", r.socket, bin, kind)
	r.cmd.Stderr = os.Stderr
	r.cmd.SysProcAttr = dieWithParent()
	if err := r.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = r.cmd.Wait(); close(r.exited) }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("unix", r.socket); err == nil {
			_ = c.Close()
			return r, nil
		}
		select {
		case <-r.exited:
			return nil, errors.New("relay exited early")
		case <-ctx.Done():
			r.close()
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.close()
			return nil, fmt.Errorf("relay socket %s never answered", r.socket)
		}
	}
}

func (r *benchRelay) pid() int { return r.cmd.Process.Pid }

func (r *benchRelay) close() { stopChild(r.cmd, r.exited, 10*time.Second) }

// session opens an MCP session through `harness mcp` on the relay socket:
// with handoff the relay copies between the client's own stdio and the
// upstream (r'), else between the socket and the upstream (r).
func (r *benchRelay) session(ctx context.Context, handoff bool) (*mcp.ClientSession, error) {
	cl := mcp.NewClient(&mcp.Implementation{Name: "bench-relay", Version: "1"}, nil)
	cmd := exec.Command(r.bin, "--socket", r.socket, "mcp")
	cmd.Env = append(os.Environ(), handoffEnv(handoff))
	return cl.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
}

// serveRelay is the -serve-relay mode: SOCKET HARNESS-BINARY UPSTREAM-KIND.
func serveRelay(args []string) error {
	if len(args) != 3 {
		return errors.New("usage: -serve-relay SOCKET HARNESS-BINARY UPSTREAM-KIND")
	}
	up, err := upstreamOf(args[2])
	if err != nil {
		return err
	}
	ln, err := net.Listen("unix", args[0])
	if err != nil {
		return err
	}
	srv := &protocol.Server{Handler: relayHandler{bin: args[1], up: up}, Version: "bench-relay"}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, protocol.ErrServerClosed) && ctx.Err() == nil {
		return err
	}
	return nil
}

// relayHandler answers no control operations and relays every MCP stream
// to a fresh upstream process.
type relayHandler struct {
	bin string
	up  callUpstream
}

func (relayHandler) Call(context.Context, string, json.RawMessage) (any, error) {
	return nil, errors.New("the bench relay serves MCP streams only")
}

func (h relayHandler) ServeMCP(ctx context.Context, conn net.Conn, _ protocol.Hello) {
	h.relay(ctx, conn)
}

// ServeMCPStdio relays the stdio a client handed over (path r'); ending
// ctx (the client asked to stop) ends the copy from its stdin.
func (h relayHandler) ServeMCPStdio(ctx context.Context, stdio io.ReadWriteCloser, _ protocol.Hello) error {
	stop := context.AfterFunc(ctx, func() { _ = stdio.Close() })
	defer stop()
	h.relay(ctx, stdio)
	return nil
}

// relay copies between rw and a fresh upstream until rw's input ends and
// the upstream has answered what it was sent.
func (h relayHandler) relay(ctx context.Context, rw io.ReadWriter) {
	name, args, err := h.up.cmd(h.bin, fmt.Sprintf("bench-relay-up-%d", os.Getpid()))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench relay:", err)
		return
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = dieWithParent()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "bench relay:", err)
		return
	}
	// Its reads and writes ask the kernel not to wait, as the daemon's
	// sessions do (internal/nowait), so that it stays the floor.
	copied := make(chan struct{})
	go func() { defer close(copied); _, _ = io.Copy(nowait.NewWriter(rw), nowait.NewReader(stdout)) }()
	_, _ = io.Copy(nowait.NewWriter(stdin), nowait.NewReader(rw))
	_ = stdin.Close()
	<-copied // os/exec: read all of stdout before Wait, which closes it
	_ = cmd.Wait()
}

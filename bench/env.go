package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/daemon"
)

// buildHarness compiles ./cmd/harness of this module into dir, as the
// README installs it.
func buildHarness(ctx context.Context, dir string) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	bin := filepath.Join(dir, "harness")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/harness")
	cmd.Dir = root
	// The static build the README installs: no dynamic loader at start-up,
	// which every measured CLI invocation pays.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/harness: %v\n%s", err, out)
	}
	return bin, nil
}

// benchDaemon is one running daemon on its own temporary paths.
type benchDaemon struct {
	bin, dir, config, socket, state string
	cmd                             *exec.Cmd
	exited                          chan struct{}
	ctl                             *client.Client
	info                            api.DaemonInfo
	bridges                         atomic.Int64
}

// startDaemon writes config into a fresh directory under tmp and starts a
// daemon on it: the harness binary, or this program in -serve-daemon mode
// when profileDir is set (its CPU profile then lands in profileDir/name.pprof).
func startDaemon(ctx context.Context, o options, bin, tmp, name, config string) (*benchDaemon, error) {
	profileDir := o.ProfileDir
	dir, err := os.MkdirTemp(tmp, name)
	if err != nil {
		return nil, err
	}
	d := &benchDaemon{bin: bin, dir: dir, config: filepath.Join(dir, "harness.toml"),
		socket: filepath.Join(dir, "s.sock"), state: filepath.Join(dir, "state"), exited: make(chan struct{})}
	if err := os.WriteFile(d.config, []byte(config), 0o600); err != nil {
		return nil, err
	}
	args := []string{"daemon", "--config", d.config, "--socket", d.socket, "--state-dir", d.state,
		"--log-file", filepath.Join(dir, "daemon.log")}
	args = append(args, o.DaemonArgs...)
	exe := bin
	if profileDir != "" {
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(profileDir, 0o755); err != nil {
			return nil, err
		}
		args = append([]string{"-serve-daemon", "-cpuprofile", filepath.Join(profileDir, name+".pprof")}, args[1:]...)
	}
	d.cmd = exec.Command(exe, args...)
	d.cmd.Stderr = os.Stderr
	d.cmd.Env = append(os.Environ(), o.DaemonEnv...)
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = d.cmd.Wait(); close(d.exited) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		d.ctl, err = client.Dial(dctx, d.socket)
		cancel()
		if err == nil {
			break
		}
		select {
		case <-d.exited:
			return nil, fmt.Errorf("daemon exited early; see %s", filepath.Join(dir, "daemon.log"))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			d.close()
			return nil, fmt.Errorf("daemon socket %s never answered: %w", d.socket, err)
		}
	}
	if err := d.ctl.Call(ctx, "daemon_info", struct{}{}, &d.info); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// waitUpstreams polls daemon_info until every upstream is running.
func (d *benchDaemon) waitUpstreams(ctx context.Context, want int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var info api.DaemonInfo
		if err := d.ctl.Call(ctx, "daemon_info", struct{}{}, &info); err != nil {
			return err
		}
		up := 0
		for _, u := range info.Upstreams {
			if u.State == "running" && u.Tools > 0 {
				up++
			}
		}
		if up >= want {
			d.info = info
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d upstreams running after 30s: %+v", up, want, info.Upstreams)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cli runs one harness verb against this daemon and returns its stdout.
func (d *benchDaemon) cli(ctx context.Context, args ...string) ([]byte, error) {
	full := append([]string{"--socket", d.socket, "--state-dir", d.state}, args...)
	cmd := exec.CommandContext(ctx, d.bin, full...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("harness %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.Bytes(), nil
}

// bridgeSession opens an MCP session through `harness mcp`: with handoff
// its stdio is handed to the daemon (path b'), else it copies bytes (b).
func (d *benchDaemon) bridgeSession(ctx context.Context, handoff bool) (*mcp.ClientSession, error) {
	cl := mcp.NewClient(&mcp.Implementation{Name: "bench-bridge", Version: "1"}, nil)
	// --allow-control: part 1's typed echo is a write tool (no annotations).
	cmd := exec.Command(d.bin, "--socket", d.socket, "mcp", "--allow-control")
	cmd.Env = append(os.Environ(), handoffEnv(handoff))
	f, err := os.Create(filepath.Join(d.dir, fmt.Sprintf("bridge-%d.log", d.bridges.Add(1))))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = f // the child keeps its own descriptor
	defer f.Close()
	return cl.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
}

// handoffEnv is the environment entry that turns the stdio hand-off of
// `harness mcp` on or off.
func handoffEnv(on bool) string {
	if on {
		return client.HandoffEnv + "=1"
	}
	return client.HandoffEnv + "=0"
}

// httpSession opens an MCP session on the daemon's Streamable HTTP endpoint
// with the operator token. Each session has its own connection pool, as
// separate agent processes would. pinned keeps the client at 2025-11-25
// (a session); otherwise it negotiates the newest version it speaks.
func (d *benchDaemon) httpSession(ctx context.Context, pinned bool) (*mcp.ClientSession, error) {
	if d.info.MCPURL == "" {
		return nil, errors.New("daemon has no mcp_url (mcp_http unset?)")
	}
	tok, err := d.cli(ctx, "mcp", "token")
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	cl := mcp.NewClient(&mcp.Implementation{Name: "bench-http", Version: "1"}, nil)
	var opts *mcp.ClientSessionOptions
	if pinned {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	}
	return cl.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   d.info.MCPURL,
		HTTPClient: &http.Client{Transport: bearer{strings.TrimSpace(string(tok)), tr}},
		MaxRetries: -1,
	}, opts)
}

// subscribe opens a connection of its own to the daemon and subscribes
// to its events; stop closes that connection, which ends the stream.
func (d *benchDaemon) subscribe(ctx context.Context) (events <-chan api.Event, stop func(), err error) {
	c, err := client.Dial(ctx, d.socket)
	if err != nil {
		return nil, nil, err
	}
	if events, err = c.Subscribe(ctx); err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	return events, func() { _ = c.Close() }, nil
}

// awaitEvent waits up to within for the next event on events that ok
// accepts, and returns it with when it arrived.
func awaitEvent(ctx context.Context, events <-chan api.Event, within time.Duration, ok func(api.Event) bool) (api.Event, time.Time, error) {
	timeout := time.After(within)
	for {
		select {
		case ev := <-events:
			if ok(ev) {
				return ev, time.Now(), nil
			}
		case <-timeout:
			return api.Event{}, time.Time{}, fmt.Errorf("no such event within %s", within)
		case <-ctx.Done():
			return api.Event{}, time.Time{}, ctx.Err()
		}
	}
}

// close ends the daemon with SIGTERM (SIGKILL after 30 s) and waits.
func (d *benchDaemon) close() {
	if d.ctl != nil {
		_ = d.ctl.Close()
	}
	stopChild(d.cmd, d.exited, 30*time.Second)
}

// stopChild sends cmd SIGTERM and waits for exited (closed by the
// goroutine that waits for cmd), with SIGKILL after grace.
func stopChild(cmd *exec.Cmd, exited <-chan struct{}, grace time.Duration) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// bearer adds the Authorization header to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// rssKiB is VmRSS (and VmHWM, the peak) of pid from /proc/PID/status.
func rssKiB(pid int) (rss, hwm int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			rss, _ = strconv.Atoi(f[1])
		case "VmHWM:":
			hwm, _ = strconv.Atoi(f[1])
		}
	}
	return rss, hwm, nil
}

// countArg counts live processes whose command line has an argument equal
// to arg (an upstream's unique --name).
func countArg(arg string) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, a := range bytes.Split(b, []byte{0}) {
			if string(a) == arg {
				n++
				break
			}
		}
	}
	return n
}

// serveDaemon is the hidden -serve-daemon mode: internal/daemon.Run in this
// process under a CPU profile, with the flags of `harness daemon`.
func serveDaemon(args []string) error {
	fs := flag.NewFlagSet("serve-daemon", flag.ContinueOnError)
	prof := fs.String("cpuprofile", "", "CPU profile file")
	cfg := fs.String("config", "", "")
	sock := fs.String("socket", "", "")
	state := fs.String("state-dir", "", "")
	logFile := fs.String("log-file", "", "")
	cgroupMode := fs.String("cgroup", daemon.CgroupAuto, "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	lf, err := os.OpenFile(*logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer lf.Close()
	pf, err := os.Create(*prof)
	if err != nil {
		return err
	}
	defer pf.Close()
	if err := pprof.StartCPUProfile(pf); err != nil {
		return err
	}
	defer pprof.StopCPUProfile()
	// SIGUSR1 writes a heap profile beside the CPU profile (after a GC, so
	// it shows what is live), then a .done marker the bench waits for.
	heap := strings.TrimSuffix(*prof, ".pprof") + ".heap.pprof"
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	go func() {
		for range usr1 {
			runtime.GC()
			if f, err := os.Create(heap); err == nil {
				_ = pprof.WriteHeapProfile(f)
				_ = f.Close()
				// Beside it, where the rest of the memory is: stacks,
				// the runtime's own, what the scavenger kept.
				_ = os.WriteFile(strings.TrimSuffix(heap, ".pprof")+".mem.txt", memClasses(), 0o600)
				_ = os.WriteFile(heap+".done", nil, 0o600)
			}
		}
	}()
	// As `harness daemon` does, so the profiles show the real daemon's
	// collector.
	daemon.TuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return daemon.Run(ctx, daemon.Options{
		ConfigPath: *cfg, SocketPath: *sock, StateDir: *state, Version: "bench", Cgroup: *cgroupMode,
		Logger: slog.New(slog.NewTextHandler(lf, nil)),
	})
}

// memClasses is the runtime's memory classes and goroutine count, one
// "name value" line each.
func memClasses() []byte {
	var ms []metrics.Sample
	for _, d := range metrics.All() {
		if d.Kind == metrics.KindUint64 && (strings.HasPrefix(d.Name, "/memory/classes/") ||
			d.Name == "/sched/goroutines:goroutines" || d.Name == "/gc/heap/live:bytes" || d.Name == "/gc/cycles/total:gc-cycles") {
			ms = append(ms, metrics.Sample{Name: d.Name})
		}
	}
	metrics.Read(ms)
	var b strings.Builder
	fmt.Fprintf(&b, "memory-limit %d\n", debug.SetMemoryLimit(-1))
	for _, m := range ms {
		fmt.Fprintf(&b, "%s %d\n", m.Name, m.Value.Uint64())
	}
	return []byte(b.String())
}

// pid is the daemon's process id.
func (d *benchDaemon) pid() int { return d.cmd.Process.Pid }

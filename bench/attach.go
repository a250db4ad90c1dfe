package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
)

// Part 6: keystroke to echo. The child is the same program on
// every path: a terminal in raw mode whose program writes back each byte
// it reads (`stty raw -echo; exec cat`), so the echo is the program's, as
// in a TUI, not the line discipline's. It prints "@" once raw mode is on.
//
//	(p) bare PTY: the bench is the terminal: it writes a key to the PTY
//	    master and reads the echo from it. The base.
//	(s) attach stream: a read-write viewer on the daemon's socket
//	    (client.DialAttach, what `harness attach` speaks): input frame ->
//	    daemon -> PTY -> child -> PTY reader -> fan-out -> output frame.
//	(t) `harness attach` in a terminal: the bench is the user's terminal
//	    (a PTY whose slave the CLI runs on): key -> CLI -> (s) -> CLI ->
//	    the bench's terminal.
const echoChild = "stty raw -echo; printf @; exec cat"

// attachRow is one path of part 6.
type attachRow struct {
	Path  string
	Stats stats
}

var attachPathNames = map[string]string{
	"p": "bare PTY: the child on a PTY the bench writes to and reads from",
	"s": "attach stream: a viewer on the daemon socket (client.DialAttach), the child supervised by the daemon",
	"t": "`harness attach` running on a terminal (PTY) the bench types into",
	"w": "the web dashboard's terminal in headless Chromium: xterm.js -> WebSocket -> daemon, timed in the page (bench/web.go)",
	"f": "the browser's floor: the same Chromium, right after (w), one byte to a WebSocket that echoes it (a Go server in the bench, no daemon, no PTY)",
}

// keyTrip is one way of typing a key and waiting for its echo.
type keyTrip interface {
	trip(key byte) error
	close()
}

// runAttach measures part 6: o.Keys keystrokes per path, in interleaved
// rounds like part 1.
func runAttach(ctx context.Context, o options, bin, tmp string, rep *report) error {
	cfg := fmt.Sprintf("[daemon]\nmcp_http = \"127.0.0.1:0\"\nmcp_http_operator_allow = [\"read\", \"write\", \"input\"]\n\n[harness.echo]\ncmd = \"sh\"\nargs = [\"-c\", %q]\nenabled = true\nterm_size = \"120x40\"\nstop_grace = 1\n"+
		// Path (w) types into a harness of its own: its writer resizes the PTY
		// to the browser, and its echoes must not push the "@" the other
		// paths wait for off the screen.
		"\n[harness.webecho]\ncmd = \"sh\"\nargs = [\"-c\", %q]\nenabled = true\nterm_size = \"120x40\"\nstop_grace = 1\n", echoChild, echoChild)
	d, err := startDaemon(ctx, o, bin, tmp, "attach", cfg)
	if err != nil {
		return err
	}
	defer d.close()
	if err := d.waitRunning(ctx, 2, 20*time.Second); err != nil {
		return err
	}
	open := map[string]func() (keyTrip, error){
		"p": func() (keyTrip, error) { return newBarePTY(ctx) },
		"s": func() (keyTrip, error) { return newStreamTrip(ctx, d.socket) },
		"t": func() (keyTrip, error) { return newCLITrip(ctx, bin, d.socket) },
	}
	floor, stopFloor, err := floorServer()
	if err != nil {
		return err
	}
	defer stopFloor()
	order := []string{"p", "s", "t", "w"}
	samples := map[string][]time.Duration{}
	webSplit := map[string][]time.Duration{}
	for round := range o.Rounds {
		for i := range order {
			path := order[(i+round)%len(order)]
			o.progress("part 6: round %d, path %s", round+1, path)
			if path == "w" {
				// Timed in the browser, a batch at a time, and the
				// browser's floor (f) right after (web.go).
				ms, fs, split, err := webKeys(ctx, d, floor, o.Warmup, o.Keys)
				if err != nil {
					return fmt.Errorf("path w: %w", err)
				}
				for k, v := range split {
					webSplit[k] = append(webSplit[k], v...)
				}
				samples[path] = append(samples[path], ms...)
				samples["f"] = append(samples["f"], fs...)
				continue
			}
			kt, err := open[path]()
			if err != nil {
				return fmt.Errorf("path %s: %w", path, err)
			}
			for k := range o.Warmup + o.Keys {
				key := byte('a' + k%26)
				t0 := time.Now()
				if err := kt.trip(key); err != nil {
					kt.close()
					return fmt.Errorf("path %s: key %d: %w", path, k, err)
				}
				if k >= o.Warmup {
					samples[path] = append(samples[path], time.Since(t0))
				}
			}
			kt.close()
		}
	}
	st := map[string]stats{}
	for _, p := range append(order, "f") {
		st[p] = summarize(samples[p])
		rep.Attach = append(rep.Attach, attachRow{Path: p, Stats: st[p]})
	}
	rep.WebSplit = map[string]stats{}
	for k, v := range webSplit {
		rep.WebSplit[k] = summarize(v)
	}
	w, t := st["w"].P50, st["t"].P50
	rep.target("dashboard keystroke to echo p50 (w) within 2x of harness attach (t)", w <= 2*t,
		"%s vs %s (%.2fx)", us(w), us(t), float64(w)/float64(max(t, 1)))
	return nil
}

// echoReader reads a terminal's output until the key comes back.
type echoReader struct {
	r   io.Reader
	buf []byte
}

// await reads until key appears, discarding what came before it. It
// relies on the caller's deadline (the reader's, or closing it) to give up.
func (e *echoReader) await(key byte) error {
	for {
		if i := bytes.IndexByte(e.buf, key); i >= 0 {
			e.buf = e.buf[i+1:]
			return nil
		}
		e.buf = e.buf[:0]
		var chunk [4096]byte
		n, err := e.r.Read(chunk[:])
		e.buf = append(e.buf, chunk[:n]...)
		if err != nil && n == 0 {
			return err
		}
	}
}

// awaitSeq reads until seq appears and keeps only what follows it.
func (e *echoReader) awaitSeq(seq []byte) error {
	for {
		if i := bytes.Index(e.buf, seq); i >= 0 {
			e.buf = e.buf[i+len(seq):]
			if len(e.buf) > 0 {
				return nil
			}
			var one [1]byte // the byte after seq
			n, err := io.ReadFull(e.r, one[:])
			e.buf = append(e.buf, one[:n]...)
			return err
		}
		var chunk [4096]byte
		n, err := e.r.Read(chunk[:])
		e.buf = append(e.buf, chunk[:n]...)
		if err != nil && n == 0 {
			return err
		}
	}
}

// onPTY is a process on a PTY the bench is the terminal of: it types a
// key into the master and reads the echo from it.
type onPTY struct {
	cmd    *exec.Cmd
	master *os.File
	echo   echoReader
}

func (p *onPTY) trip(key byte) error {
	if _, err := p.master.Write([]byte{key}); err != nil {
		return err
	}
	return timed(p.master, func() error { return p.echo.await(key) })
}

// barePTY is path (p): the child on a PTY of the bench's own.
type barePTY struct{ onPTY }

func newBarePTY(ctx context.Context) (*barePTY, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", echoChild)
	master, err := startPTY(cmd)
	if err != nil {
		return nil, err
	}
	b := &barePTY{onPTY{cmd: cmd, master: master, echo: echoReader{r: master}}}
	if err := timed(master, func() error { return b.echo.await('@') }); err != nil {
		b.close()
		return nil, fmt.Errorf("the child never came up: %w", err)
	}
	return b, nil
}

func (b *barePTY) close() {
	_ = b.master.Close()
	_ = b.cmd.Process.Kill()
	_ = b.cmd.Wait()
}

// startPTY starts cmd on a new 120x40 PTY and returns a master that takes
// read deadlines (creack/pty's is in blocking mode).
func startPTY(cmd *exec.Cmd) (*os.File, error) {
	m, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 120, Rows: 40})
	if err != nil {
		return nil, err
	}
	fd, err := unix.Dup(int(m.Fd()))
	m.Close()
	if err == nil {
		err = unix.SetNonblock(fd, true)
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("pty master: %w", err)
	}
	unix.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "ptmx"), nil
}

// timed runs read with a 10 s read deadline on f.
func timed(f *os.File, read func() error) error {
	if err := f.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	return read()
}

// streamTrip is path (s): a read-write attach stream.
type streamTrip struct {
	a    *client.Attachment
	out  chan []byte
	done chan error
	buf  []byte
}

func newStreamTrip(ctx context.Context, socket string) (*streamTrip, error) {
	a, err := client.DialAttach(ctx, socket, api.AttachArgs{Name: "echo", Cols: 120, Rows: 40})
	if err != nil {
		return nil, err
	}
	s := &streamTrip{a: a, out: make(chan []byte, 64), done: make(chan error, 1)}
	go func() {
		for {
			out, ev, err := a.Recv()
			if err != nil {
				s.done <- err
				close(s.out)
				return
			}
			if ev == nil {
				s.out <- out
			}
		}
	}()
	// The repaint is the first output, whole; the child is ready once "@"
	// is on its screen (it may still be starting on the first round).
	for !bytes.Contains(s.buf, []byte("@")) {
		select {
		case out, ok := <-s.out:
			if !ok {
				return nil, fmt.Errorf("stream ended: %w", <-s.done)
			}
			s.buf = append(s.buf, out...)
		case <-time.After(10 * time.Second):
			s.close()
			return nil, errors.New("the child never came up")
		}
	}
	s.buf = s.buf[:0] // echoes of earlier rounds are on that screen too
	return s, nil
}

func (s *streamTrip) trip(key byte) error {
	if err := s.a.Input([]byte{key}); err != nil {
		return err
	}
	timeout := time.After(5 * time.Second)
	for {
		if i := bytes.IndexByte(s.buf, key); i >= 0 {
			s.buf = s.buf[i+1:]
			return nil
		}
		s.buf = s.buf[:0]
		select {
		case out, ok := <-s.out:
			if !ok {
				return fmt.Errorf("stream ended: %w", <-s.done)
			}
			s.buf = append(s.buf, out...)
		case <-timeout:
			return errors.New("no echo within 5s")
		}
	}
}

func (s *streamTrip) close() {
	_ = s.a.Close()
	for range s.out { // until the reader ends
	}
}

// cliTrip is path (t): `harness attach echo` on a PTY the bench types into.
type cliTrip struct{ onPTY }

func newCLITrip(ctx context.Context, bin, socket string) (*cliTrip, error) {
	return newCLITripArgs(ctx, bin, nil, "--socket", socket, "attach", "echo")
}

// newCLITripArgs is path (t) with other arguments (--host) and env added.
func newCLITripArgs(ctx context.Context, bin string, env []string, args ...string) (*cliTrip, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	master, err := startPTY(cmd)
	if err != nil {
		return nil, err
	}
	c := &cliTrip{onPTY{cmd: cmd, master: master, echo: echoReader{r: master}}}
	// The repaint ends with the cursor's visibility (CSI ?25h or l), and
	// the screen it draws holds echoes of earlier rounds: skip past it.
	if err := timed(master, func() error { return c.echo.awaitSeq([]byte("\x1b[?25")) }); err != nil {
		c.close()
		return nil, fmt.Errorf("no repaint from harness attach: %w", err)
	}
	c.echo.buf = c.echo.buf[min(1, len(c.echo.buf)):]
	return c, nil
}

func (c *cliTrip) close() {
	_, _ = c.master.Write([]byte{0x1d}) // Ctrl-]: detach
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
	_ = c.master.Close()
}

// printAttach writes part 6's table.
func (r *report) printAttach(w io.Writer) {
	if len(r.Attach) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Part 6: attach, keystroke to echo\n\n")
	for _, p := range []string{"p", "s", "t", "w", "f"} {
		fmt.Fprintf(w, "- (%s) %s\n", p, attachPathNames[p])
	}
	var base stats
	for _, a := range r.Attach {
		if a.Path == "p" {
			base = a.Stats
		}
	}
	fmt.Fprintf(w, "\n| path | keys | p50 | p99 | p50 vs (p) | p99 vs (p) | p50 - (p) |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, a := range r.Attach {
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s |\n", a.Path, a.Stats.N, us(a.Stats.P50), us(a.Stats.P99),
			ratio(float64(a.Stats.P50), float64(base.P50)), ratio(float64(a.Stats.P99), float64(base.P99)), us(a.Stats.P50-base.P50))
	}
	p50 := map[string]time.Duration{}
	for _, a := range r.Attach {
		p50[a.Path] = a.Stats.P50
	}
	if p50["f"] > 0 && p50["t"] > 0 {
		// (w) is at least (f) + (s): the browser's own WebSocket round
		// trip plus the daemon, PTY and child behind it. Say how much of
		// the 2x budget (f) alone takes, and what the page adds beyond.
		fmt.Fprintf(w, "\n(f) / (t) = %.2fx: the browser's own WebSocket round trip against `harness attach`. (w) - (f) = %s, against (s) = %s (the daemon, PTY and child a key goes through on any path); (w) - (f) - (s) = %s is the rest: the split below says how little of it is xterm.js.\n",
			float64(p50["f"])/float64(p50["t"]), us(p50["w"]-p50["f"]), us(p50["s"]), us(p50["w"]-p50["f"]-p50["s"]))
	}
	if sp := r.WebSplit; len(sp) > 0 {
		// Where each (w) trip goes, by marks in the page (web.go): the
		// parts' medians do not add up to the trip's median exactly.
		fmt.Fprintf(w, "\n(w) split by marks in the page, p50 (p99): xterm.js input to ws.send %s (%s); ws.send to the page's onmessage (the browser's network path, the daemon, PTY and program, the main thread's wait) %s (%s); onmessage to the echo handled (term.write parses it at once) %s (%s). (f) + (s) = %s.\n",
			us(sp["input"].P50), us(sp["input"].P99), us(sp["wire"].P50), us(sp["wire"].P99),
			us(sp["deliver"].P50), us(sp["deliver"].P99), us(p50["f"]+p50["s"]))
	}
}

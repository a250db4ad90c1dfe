//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/term"

	"github.com/harness-dev/harness/internal/testenv"
)

// tmuxServer is a private tmux server: a real terminal for `harness
// attach`, typed into with send-keys and read with capture-pane, as a
// person at a terminal would.
type tmuxServer struct {
	t    *testing.T
	sock string
	conf string
	env  []string
}

// newTmuxServer starts nothing yet: the first session starts the server. Panes
// are 100x30 without a status line; their shell is sh with the prompt "$ ".
func newTmuxServer(t *testing.T) *tmuxServer {
	t.Helper()
	testenv.Program(t, "tmux")
	dir := t.TempDir()
	x := &tmuxServer{t: t, sock: filepath.Join(dir, "tmux.sock"), conf: filepath.Join(dir, "tmux.conf")}
	conf := "set -g status off\nset -g default-size \"100x30\"\nset -g default-shell /bin/sh\n"
	if err := os.WriteFile(x.conf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	x.env = append(os.Environ(), "HARNESS_SOCKET=", "HARNESS_MCP_TOKEN=", "PS1=$ ", "ENV=", "TMUX=")
	t.Cleanup(func() {
		c := exec.Command("tmux", "-S", x.sock, "kill-server")
		c.Env = x.env
		_ = c.Run() // the server may be gone already
	})
	return x
}

func (x *tmuxServer) run(args ...string) string {
	x.t.Helper()
	c := exec.Command("tmux", append([]string{"-S", x.sock, "-f", x.conf}, args...)...)
	c.Env = x.env
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Run(); err != nil {
		x.t.Fatalf("tmux %v: %v\n%s", args, err, errOut.String())
	}
	return out.String()
}

// window opens a window running sh, 100x30, named name.
func (x *tmuxServer) window(name string) {
	x.t.Helper()
	if _, err := os.Stat(x.sock); err != nil {
		x.run("new-session", "-d", "-s", "e2e", "-n", name, "-x", "100", "-y", "30", "sh")
	} else {
		x.run("new-window", "-d", "-t", "e2e", "-n", name, "sh")
	}
	x.waitPane(name, "its shell prompt", func(s string) bool { return strings.HasPrefix(s, "$") })
}

// typeLine types text literally, then Enter.
func (x *tmuxServer) typeLine(win, text string) {
	x.t.Helper()
	x.run("send-keys", "-t", "e2e:"+win, "-l", text)
	x.run("send-keys", "-t", "e2e:"+win, "Enter")
}

// pane is what the window shows, rows trimmed on the right, trailing
// empty rows dropped.
func (x *tmuxServer) pane(win string) string {
	x.t.Helper()
	return trimRows(x.run("capture-pane", "-p", "-t", "e2e:"+win))
}

func trimRows(s string) string {
	rows := strings.Split(s, "\n")
	for i := range rows {
		rows[i] = strings.TrimRight(rows[i], " ")
	}
	return strings.TrimRight(strings.Join(rows, "\n"), "\n")
}

func (x *tmuxServer) waitPane(win, what string, cond func(string) bool) string {
	x.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := x.pane(win)
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("window %s never showed %s; it shows:\n%s", win, what, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (x *tmuxServer) waitText(win, text string) string {
	x.t.Helper()
	return x.waitPane(win, strconv.Quote(text), func(s string) bool { return strings.Contains(s, text) })
}

// cursor is where the window's cursor is, 0-based.
func (x *tmuxServer) cursor(win string) (col, row int) {
	x.t.Helper()
	out := x.run("display-message", "-p", "-t", "e2e:"+win, "#{cursor_x} #{cursor_y}")
	if _, err := fmt.Sscanf(out, "%d %d", &col, &row); err != nil {
		x.t.Fatalf("cursor of %s: %q", win, out)
	}
	return col, row
}

// emulatorScreen is what the daemon's terminal emulator makes of the
// harness's output: its raw bytes fed to a fresh emulator of the PTY's
// size.
func (f *fleet) emulatorScreen(name string) term.Snapshot {
	f.T.Helper()
	var raw api.LogsRaw
	f.MustJSON(&raw, "logs", name, "--raw")
	em := term.New(term.Options{Cols: raw.Cols, Rows: raw.Rows})
	defer em.Close()
	em.Feed([]byte(raw.Text))
	return em.Snapshot(term.SnapshotOptions{ANSI: true})
}

// tuiHarness is this test binary in mode "sizes" (sizesChild), sized
// 100x30.
var tuiHarness = childHarness("tui", "sizes", "term_size = \"100x30\"\nenabled = true")

// sizesChild draws a coloured line, then reports its terminal's size at
// start and on every SIGWINCH, and answers each line typed with "got: ".
// It ends when its terminal does. (A bash loop with a WINCH trap lost a
// signal now and then on a loaded machine.)
func sizesChild() int {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	fmt.Print("\x1b[1;31mRED\x1b[0m plain \x1b[42mGREEN\x1b[0m\n")
	size := func() {
		if rows, cols, err := pty.Getsize(os.Stdin); err == nil {
			fmt.Printf("size %d %d\n", rows, cols)
		}
	}
	size()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	for {
		select {
		case <-winch:
			size()
		case l, ok := <-lines:
			if !ok {
				return 0
			}
			fmt.Printf("got: %s\n", l)
		}
	}
}

// TestScenario_AttachInARealTerminal drives `harness attach` in tmux: a
// late read-only viewer sees what the emulator shows, colours and cursor
// included; a second viewer types and its keys reach the child, which the
// read-only one sees and cannot do; resizing the writer's window resizes
// the child's terminal, never below its term_size; a restart is a notice; Ctrl-] returns to the shell
// with the child running; a stop from elsewhere ends the attachment with
// the state; attach refuses a stdio unit, a stopped one and a missing
// terminal.
func TestScenario_AttachInARealTerminal(t *testing.T) {
	f := newFleet(t, tuiHarness+upstreamTable("up", "attach-"+filepath.Base(t.TempDir()), ""))
	f.waitLog("tui", "size 30 100")
	x := newTmuxServer(t)
	attach := fmt.Sprintf("%s --socket %s attach", harnessBin, f.Socket)

	// A late viewer: the repaint shows the screen as the emulator has it.
	x.window("ro")
	x.typeLine("ro", attach+" --read-only tui")
	x.waitText("ro", "size 30 100")
	snap := f.emulatorScreen("tui")
	if want := trimRows(strings.Join(snap.Lines, "\n")); x.pane("ro") != want {
		t.Fatalf("the attached view differs from the emulator's screen\nattached:\n%s\nemulator:\n%s", x.pane("ro"), want)
	}
	if c, r := x.cursor("ro"); c != snap.Cursor.Col || r != snap.Cursor.Row {
		t.Fatalf("cursor at %d,%d, the emulator's at %d,%d", c, r, snap.Cursor.Col, snap.Cursor.Row)
	}
	colours := x.run("capture-pane", "-p", "-e", "-t", "e2e:ro")
	red, green := strings.Index(colours, "RED"), strings.Index(colours, "GREEN")
	if red < 0 || green < 0 || !strings.Contains(colours[:red], "31m") || !strings.Contains(colours[red:green], "42m") {
		t.Fatalf("colours lost in the repaint: %q", colours[:min(len(colours), 200)])
	}

	// A viewer that types.
	x.window("rw")
	x.typeLine("rw", attach+" tui")
	x.waitText("rw", "GREEN")
	x.typeLine("rw", "hello from tmux")
	f.waitLog("tui", "got: hello from tmux")
	x.waitText("rw", "got: hello from tmux")
	x.waitText("ro", "got: hello from tmux")
	// The read-only viewer's keys go nowhere.
	x.typeLine("ro", "typed by a watcher")
	x.typeLine("rw", "after the watcher")
	f.waitLog("tui", "got: after the watcher")
	if f.logHas("tui", "got: typed by a watcher") {
		t.Fatal("a read-only viewer's keys reached the child")
	}

	// Resizing the writer's window resizes the child's terminal, but a
	// smaller window leaves it at its term_size.
	x.run("resize-window", "-t", "e2e:rw", "-x", "120", "-y", "36")
	f.waitLog("tui", "size 36 120")
	x.run("resize-window", "-t", "e2e:rw", "-x", "80", "-y", "24")
	x.waitText("rw", "[harness: the terminal stays 100x30")
	if snap := f.emulatorScreen("tui"); snap.Cols != 100 || snap.Rows != 30 {
		t.Fatalf("a smaller window shrank the child's terminal to %dx%d", snap.Cols, snap.Rows)
	}
	var info struct {
		PID int `json:"pid"`
	}
	f.MustJSON(&info, "describe", "tui")

	// Ctrl-] detaches: the shell is back, the child goes on.
	x.run("send-keys", "-t", "e2e:rw", "C-]")
	x.waitText("rw", "harness: detached from tui (it goes on running)")
	x.typeLine("rw", "echo shell-is-back")
	x.waitPane("rw", "the shell's answer", func(s string) bool { return strings.Contains(s, "\nshell-is-back") })
	if u := f.unit("tui"); u.State != "running" || u.PID != info.PID {
		t.Fatalf("after detaching: %+v, was pid %d", u, info.PID)
	}

	// A restart keeps the viewer, with a notice; a stop ends it.
	f.MustRun("restart", "tui")
	x.waitText("ro", "[harness: tui restarted: run ")
	f.MustRun("stop", "tui")
	x.waitText("ro", "harness: tui is stopped: ")
	x.typeLine("ro", "echo exit=$?")
	x.waitText("ro", "exit=0")

	// Refusals, each with a message and a non-zero exit.
	x.typeLine("rw", "clear; "+attach+" tui; echo stopped-exit=$?")
	x.waitText("rw", "stopped-exit=1")
	if s := x.pane("rw"); !strings.Contains(s, "harness: tui is not running (stopped)") {
		t.Fatalf("attach to a stopped harness:\n%s", s)
	}
	x.typeLine("rw", "clear; "+attach+" mcp.up; echo upstream-exit=$?")
	x.waitText("rw", "upstream-exit=1")
	if s := x.pane("rw"); !strings.Contains(s, "mcp.up is an MCP upstream: it has no terminal") {
		t.Fatalf("attach to an upstream:\n%s", s)
	}
	f.MustRun("start", "tui")
	_, errOut, code := f.Run("attach", "tui") // stdin is not a terminal
	if code == 0 || !strings.Contains(errOut, "attach needs a terminal") {
		t.Fatalf("attach without a terminal: exit %d: %s", code, errOut)
	}
}

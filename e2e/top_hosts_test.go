//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hostRow is the row of name under the heading "host LABEL" of a
// several-host top (the fields of the first such line, nil without one).
func hostRow(screen, label, name string) []string {
	under := false
	for _, l := range strings.Split(screen, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 2 && f[0] == "host":
			under = strings.TrimSuffix(f[1], ":") == label
		case under && len(f) > 1 && f[0] == name:
			return f
		}
	}
	return nil
}

// TestScenario_TopOverTwoHostsThroughSSH: `harness top --host a --host b
// --host c` in tmux, where a and b are two daemons behind two keys of a
// real sshd (ssh config aliases, as a user would have them) and c has no
// server: one view grouped by host, both fleets' rows (a harness of the
// same name on each), c's heading saying it is unreachable in one line;
// a stop on b's row stops b's harness and not a's; a change made on a
// shows on a's row; attach from b's row is b's program; b's daemon
// going away leaves a heading saying so while a's rows stay.
func TestScenario_TopOverTwoHostsThroughSSH(t *testing.T) {
	const cfg = `
[harness.web]
cmd = "sh"
args = ["-c", "echo web-of-%s; while read l; do echo \"got:$l\"; done"]
enabled = true

[harness.%s]
cmd = "sleep"
args = ["100000"]
`
	fa := newFleet(t, fmt.Sprintf(cfg, "a", "only-a"))
	fb := newFleet(t, fmt.Sprintf(cfg, "b", "only-b"))
	bridge := func(f *fleet) string {
		return fmt.Sprintf("%s --socket %s bridge --grant read,write,input", harnessBin, f.Socket)
	}
	s := newSSHD(t, sshKey{Name: "key-a", Command: bridge(fa)}, sshKey{Name: "key-b", Command: bridge(fb)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	conf := filepath.Join(t.TempDir(), "ssh_config")
	var b strings.Builder
	for _, h := range []struct {
		name, key string
		port      int
	}{{"hosta", "key-a", s.Port}, {"hostb", "key-b", s.Port}, {"hostc", "key-a", closedPort}} {
		fmt.Fprintf(&b, "Host %s\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n  ConnectTimeout 5\n",
			h.name, h.port, s.User, filepath.Join(s.Dir, h.key))
	}
	if err := os.WriteFile(conf, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	fa.waitState("web", "running")
	fb.waitState("web", "running")

	// "local" is this machine's daemon for any verb, as for top.
	if out, errOut, code := fa.Run("--host", "local", "list", "--json"); code != 0 || !strings.Contains(out, "only-a") {
		t.Fatalf("--host local list: exit %d: %s%s", code, out, errOut)
	}
	// Only top takes several hosts; another verb says so, not picks one.
	out, _, code := s.runHost("ssh://hosta", "key-a", "--host", "ssh://hostb", "list", "--json")
	if code == 0 || !strings.Contains(out, "invalid_argument") || !strings.Contains(out, "only top") {
		t.Fatalf("list with two hosts: exit %d: %s", code, out)
	}

	p := newTmux(t, 120, 40)
	p.typeLine(fmt.Sprintf("HARNESS_SSH_COMMAND='ssh -F %s' %s top --host hosta --host hostb --host hostc; echo top-exit=$?", conf, harnessBin))
	screen := p.waitScreen("both hosts' rows", 30*time.Second, func(s string) bool {
		return len(hostRow(s, "hosta", "web")) > 1 && len(hostRow(s, "hostb", "web")) > 1 && strings.Contains(s, "host hostc:")
	})
	if hostRow(screen, "hosta", "only-a") == nil || hostRow(screen, "hostb", "only-b") == nil ||
		hostRow(screen, "hosta", "only-b") != nil || hostRow(screen, "hostb", "only-a") != nil {
		t.Fatalf("rows not grouped by their host:\n%s", screen)
	}
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, "host hostc:") && !strings.Contains(l, "unreachable") {
			t.Fatalf("hostc's heading does not say it is unreachable: %q", l)
		}
	}
	if !strings.Contains(strings.Split(screen, "\n")[0], "3 hosts, 1 down") {
		t.Errorf("title: %q", strings.Split(screen, "\n")[0])
	}

	// Down to b's web, stop it from the keyboard: b's stops, a's runs on.
	for i := 0; !strings.Contains(p.screen(), "preview of hostb/web"); i++ {
		if i > 10 {
			t.Fatalf("the cursor never reached hostb/web:\n%s", p.screen())
		}
		p.keys("Down")
		time.Sleep(150 * time.Millisecond)
	}
	p.keys("x")
	fb.waitState("web", "stopped")
	p.waitScreen("b's web stopped", 15*time.Second, func(s string) bool {
		r := hostRow(s, "hostb", "web")
		return len(r) > 1 && r[1] == "stopped"
	})
	if u := fa.unit("web"); u.State != "running" {
		t.Fatalf("a's web is %s after stopping b's", u.State)
	}
	// A change on a (its own CLI) shows on a's row, through a's events.
	fa.MustRun("stop", "only-a")
	fa.MustRun("start", "only-a")
	fa.MustRun("stop", "web")
	p.waitScreen("a's web stopped", 15*time.Second, func(s string) bool {
		r := hostRow(s, "hosta", "web")
		return len(r) > 1 && r[1] == "stopped"
	})

	// Start b's web again and attach to it: b's program, through ssh.
	p.keys("s")
	fb.waitState("web", "running")
	p.waitText("start hostb/web", 10*time.Second)
	p.keys("a")
	p.waitScreen("b's program attached", 20*time.Second, func(s string) bool {
		return strings.Contains(s, "web-of-b") && !strings.Contains(s, "preview of")
	})
	p.tmux("send-keys", "-t", "top", "-l", "typed-through-top")
	p.keys("Enter")
	p.waitText("got:typed-through-top", 10*time.Second)
	p.keys("C-]")
	p.waitText("detached from hostb/web", 15*time.Second)
	if raw := fa.MustRun("logs", "web", "--raw"); strings.Contains(raw, "typed-through-top") {
		t.Fatal("the attach typed into a's web")
	}

	// b's daemon goes away: its heading says so, a's rows stay.
	fb.Stop()
	screen = p.waitScreen("b's heading saying it is gone", 20*time.Second, func(s string) bool {
		return strings.Contains(s, "host hostb: lost the connection")
	})
	if hostRow(screen, "hosta", "only-a") == nil || hostRow(screen, "hostb", "web") != nil {
		t.Fatalf("after b went away:\n%s", screen)
	}
	p.keys("q")
	p.waitText("top-exit=0", 10*time.Second)
}

// TestScenario_TopWithoutHostShowsTheConfiguredHosts: `harness top`
// with no --host shows the config's [host.NAME] machines beside the local
// fleet, as the page does, each through its own key (identity); attach
// from a configured host's row reaches that host's program with that key.
func TestScenario_TopWithoutHostShowsTheConfiguredHosts(t *testing.T) {
	fb := newFleet(t, `
[harness.web]
cmd = "sh"
args = ["-c", "echo web-of-b; while read l; do echo \"got:$l\"; done"]
enabled = true
`)
	s := newSSHD(t, sshKey{Name: "key-b", Command: fmt.Sprintf("%s --socket %s bridge --grant read,write,input", harnessBin, fb.Socket)})
	fa := newFleet(t, fmt.Sprintf(`
[harness.only-a]
cmd = "sleep"
args = ["100000"]
enabled = true

[host.box]
ssh = %q
identity = %q
`, s.Host(), filepath.Join(s.Dir, "key-b")))
	fb.waitState("web", "running")
	fa.waitState("only-a", "running")

	p := newTmux(t, 120, 40)
	p.typeLine(fmt.Sprintf("HARNESS_SSH_COMMAND='ssh -F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR' HARNESS_CONFIG=%s HARNESS_SOCKET=%s %s top; echo top-exit=$?", fa.Config, fa.Socket, harnessBin))
	p.waitScreen("local and box rows", 20*time.Second, func(s string) bool {
		return len(hostRow(s, "local", "only-a")) > 1 && len(hostRow(s, "box", "web")) > 1
	})
	for i := 0; !strings.Contains(p.screen(), "preview of box/web"); i++ {
		if i > 10 {
			t.Fatalf("the cursor never reached box/web:\n%s", p.screen())
		}
		p.keys("Down")
		time.Sleep(150 * time.Millisecond)
	}
	p.keys("a")
	p.waitScreen("box's program attached", 20*time.Second, func(s string) bool {
		return strings.Contains(s, "web-of-b") && !strings.Contains(s, "preview of")
	})
	p.keys("C-]")
	p.waitText("detached from box/web", 15*time.Second)
	p.keys("q")
	p.waitText("top-exit=0", 10*time.Second)
}

//go:build interop

package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/client"
)

// The TypeScript SDK client starts `harness mcp` (its stdio are
// whatever Node gives a child), and the daemon serves the session on that
// stdio itself; with HARNESS_MCP_HANDOFF=0 in the environment (the suite's
// second run) it never holds it. The session works either way, before and
// after the check.
func TestTS_BridgeHandsItsStdioToTheDaemon(t *testing.T) {
	f := newFleet(t, "")
	c := startTS(t,
		connectStep("h", f.bridge()),
		opStep("h", "callTool", "name", "harness_daemon_info"),
		opStep("h", "pause"),
		opStep("h", "callTool", "name", "harness_list"),
		opStep("h", "close"),
	)
	for range 3 { // connect, daemon_info, pause
		c.must(c.next(), nil)
	}
	bridge := childRunning(t, c.cmd.Process.Pid, harnessBin)
	want := client.HandoffEnabled(os.Getenv(client.HandoffEnv))
	for _, fd := range []string{"0", "1"} {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", bridge, fd))
		if err != nil {
			t.Fatal(err)
		}
		if got := holdsLink(t, f.Cmd.Process.Pid, link); got != want {
			t.Errorf("daemon holds the bridge's fd %s (%s): %t, want %t (%s=%q)", fd, link, got, want,
				client.HandoffEnv, os.Getenv(client.HandoffEnv))
		}
	}
	c.resume()
	var list toolResult
	c.must(c.next(), nil) // resume
	c.must(c.next(), &list)
	if list.IsError {
		t.Fatalf("harness_list after the check: %s", list.text())
	}
	c.must(c.next(), nil) // close
	c.wait()
}

// childRunning is the pid of the one child of parent running bin.
func childRunning(t *testing.T, parent int, bin string) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	var found []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		cmdline, err2 := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || err2 != nil {
			continue
		}
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(parent) && strings.HasPrefix(string(cmdline), bin+"\x00") {
			found = append(found, pid)
		}
	}
	if len(found) != 1 {
		t.Fatalf("children of %d running %s: %v, want one", parent, bin, found)
	}
	return found[0]
}

// holdsLink reports whether pid has a descriptor whose /proc link is link
// (a pipe or socket inode).
func holdsLink(t *testing.T, pid int, link string) bool {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name())); err == nil && l == link {
			return true
		}
	}
	return false
}

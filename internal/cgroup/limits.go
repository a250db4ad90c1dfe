//go:build linux

package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Resource limits (docs/design/resources.md). The pids, memory and cpu controllers are
// taken where the daemon can have them:
//
//   - cgroup v2: when the daemon's cgroup delegates them to its children
//     (they are listed in the subtree's cgroup.controllers), the subtree
//     and each unit enable them for the cgroups below, and a run's leaf
//     gets pids.max, memory.max, memory.high and cpu.weight.
//   - cgroup v1 (a hybrid layout, where a controller is bound to a v1
//     hierarchy and so absent from v2): the daemon makes the same subtree
//     in that hierarchy, below its own cgroup there, with a leaf per run
//     (pids.max; memory.limit_in_bytes; cpu.shares). A spawn joins those
//     leaves before its first instruction: the spawning thread moves into
//     them, forks (a child starts in its parent thread's v1 cgroups), and
//     moves back; v1 membership is per thread, so the rest of the daemon
//     never enters a unit's cgroup. v1 has no memory.high: memory_high is
//     not applied there (Controllers says so).
//
// Neither: the limit is not applied and Controllers says why.

// v1Hier is the daemon's subtree in one cgroup v1 hierarchy.
type v1Hier struct {
	ctrl string
	home string // the daemon's own cgroup in the hierarchy (threads go back here)
	dir  string // the subtree: home/<name>
}

// setupControllers enables what the subtree can have; failures are
// reasons, never errors: the daemon runs without limits then.
func (t *Tree) setupControllers(name string) {
	avail := map[string]bool{}
	if b, err := os.ReadFile(filepath.Join(t.dir, "cgroup.controllers")); err == nil {
		for _, c := range strings.Fields(string(b)) {
			avail[c] = true
		}
	}
	t.ctrl = map[string]ControllerState{}
	var v1need []string
	for _, c := range Controllers {
		if avail[c] {
			if err := os.WriteFile(filepath.Join(t.dir, "cgroup.subtree_control"), []byte("+"+c), 0); err == nil {
				t.v2 = append(t.v2, c)
				t.ctrl[c] = ControllerState{Name: c, Version: "v2"}
				continue
			} else {
				t.ctrl[c] = ControllerState{Name: c, Why: fmt.Sprintf("cgroup v2: enable in %s: %v", t.dir, err)}
			}
		} else {
			t.ctrl[c] = ControllerState{Name: c, Why: fmt.Sprintf("cgroup v2: not delegated to %s (the daemon's cgroup does not enable it for its children: systemd Delegate=yes does)", filepath.Dir(t.dir))}
		}
		v1need = append(v1need, c)
	}
	if len(v1need) == 0 {
		return
	}
	mi, err1 := os.ReadFile("/proc/self/mountinfo")
	pc, err2 := os.ReadFile("/proc/self/cgroup")
	if err := errors.Join(err1, err2); err != nil {
		return
	}
	for _, c := range v1need {
		h, err := makeV1(c, name, mi, pc)
		if err != nil {
			if !errors.Is(err, errNoV1) {
				st := t.ctrl[c]
				st.Why += "; cgroup v1: " + err.Error()
				t.ctrl[c] = st
			}
			continue
		}
		t.v1 = append(t.v1, h)
		st := ControllerState{Name: c, Version: "v1"}
		if c == Memory {
			st.Why = "cgroup v1 has no memory.high: memory_high is not applied"
		}
		t.ctrl[c] = st
	}
}

var errNoV1 = errors.New("no cgroup v1 hierarchy")

// makeV1 makes the subtree name in the v1 hierarchy of ctrl, below the
// daemon's own cgroup there. A leftover subtree of a crashed daemon
// (its processes were ended with the v2 one) is removed first.
func makeV1(ctrl, name string, mountinfo, procCgroup []byte) (v1Hier, error) {
	mount := ""
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+3 >= len(f) || f[sep+1] != "cgroup" || f[3] != "/" {
			continue
		}
		for _, o := range strings.Split(f[sep+3], ",") {
			if o == ctrl {
				mount = unescapeMount(f[4])
			}
		}
	}
	if mount == "" {
		return v1Hier{}, errNoV1
	}
	path := ""
	for line := range bytes.Lines(procCgroup) {
		parts := strings.SplitN(strings.TrimSpace(string(line)), ":", 3)
		if len(parts) == 3 && parts[0] != "0" {
			for _, c := range strings.Split(parts[1], ",") {
				if c == ctrl {
					path = parts[2]
				}
			}
		}
	}
	if path == "" || strings.Contains(path, "..") {
		return v1Hier{}, fmt.Errorf("the daemon's %s cgroup is not visible here", ctrl)
	}
	h := v1Hier{ctrl: ctrl, home: filepath.Join(mount, filepath.FromSlash(path))}
	h.dir = filepath.Join(h.home, name)
	if _, err := os.Stat(h.dir); err == nil {
		if err := removeTree(h.dir); err != nil {
			return v1Hier{}, fmt.Errorf("a previous daemon's %s: %w", h.dir, err)
		}
	}
	if err := os.Mkdir(h.dir, 0o755); err != nil {
		return v1Hier{}, fmt.Errorf("create %s: %w", h.dir, err)
	}
	// Probe: the spawning thread must be able to go there and back.
	if err := joinThread([]string{h.dir}, func() error { return nil }, []string{h.home}); err != nil {
		return v1Hier{}, errors.Join(err, removeDir(h.dir))
	}
	return h, nil
}

// ControllerStates says, per controller, whether runs are limited.
func (t *Tree) ControllerStates() []ControllerState {
	out := make([]ControllerState, 0, len(Controllers))
	for _, c := range Controllers {
		out = append(out, t.ctrl[c])
	}
	return out
}

// prepareUnit enables the v2 controllers below a unit's cgroup, so its
// run leaves get their files.
func (t *Tree) prepareUnit(unitDir string) error {
	if len(t.v2) == 0 {
		return nil
	}
	ctl := "+" + strings.Join(t.v2, " +")
	if err := os.WriteFile(filepath.Join(unitDir, "cgroup.subtree_control"), []byte(ctl), 0); err != nil {
		return fmt.Errorf("cgroup: enable %s in %s: %w", ctl, unitDir, err)
	}
	return nil
}

// makeV1Leaves makes the run's leaves in the v1 hierarchies.
func (t *Tree) makeV1Leaves(unitName, leaf string) ([]v1Leaf, error) {
	var out []v1Leaf
	for _, h := range t.v1 {
		dir := filepath.Join(h.dir, unitName, leaf)
		if err := os.MkdirAll(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return out, fmt.Errorf("cgroup: %s: %w", dir, err)
		}
		out = append(out, v1Leaf{ctrl: h.ctrl, dir: dir, home: h.home})
	}
	return out, nil
}

// v1Leaf is a run's leaf in one v1 hierarchy.
type v1Leaf struct{ ctrl, dir, home string }

// applyLimits writes l into the run's leaves: the v2 leaf for the
// controllers v2 has, the v1 leaves for the rest.
func (g *Group) applyLimits(v2 []string, l Limits) error {
	var errs []error
	write := func(dir, file, val string) {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(val), 0); err != nil {
			errs = append(errs, fmt.Errorf("cgroup: set %s/%s: %w", dir, file, err))
		}
	}
	for _, c := range v2 {
		switch c {
		case Pids:
			if l.TasksMax > 0 {
				write(g.dir, "pids.max", strconv.Itoa(l.TasksMax))
			}
		case Memory:
			if l.MemoryMax > 0 {
				write(g.dir, "memory.max", strconv.FormatInt(l.MemoryMax, 10))
			}
			if l.MemoryHigh > 0 {
				write(g.dir, "memory.high", strconv.FormatInt(l.MemoryHigh, 10))
			}
		case CPU:
			if l.CPUWeight > 0 {
				write(g.dir, "cpu.weight", strconv.Itoa(l.CPUWeight))
			}
		}
	}
	for _, v := range g.v1 {
		switch v.ctrl {
		case Pids:
			if l.TasksMax > 0 {
				write(v.dir, "pids.max", strconv.Itoa(l.TasksMax))
			}
		case Memory:
			if l.MemoryMax > 0 {
				write(v.dir, "memory.limit_in_bytes", strconv.FormatInt(l.MemoryMax, 10))
				// Swap must not carry a run past its limit.
				if _, err := os.Stat(filepath.Join(v.dir, "memory.memsw.limit_in_bytes")); err == nil {
					write(v.dir, "memory.memsw.limit_in_bytes", strconv.FormatInt(l.MemoryMax, 10))
				}
			}
		case CPU:
			if l.CPUWeight > 0 {
				// systemd's mapping: weight 100 (the default) is 1024 shares.
				write(v.dir, "cpu.shares", strconv.Itoa(max(2, l.CPUWeight*1024/100)))
			}
		}
	}
	return errors.Join(errs...)
}

// Start runs start (which forks the run's main process) so that the
// child starts in the run's v1 leaves too: the calling thread joins them
// for the fork and goes back to the daemon's own cgroups after. Without
// v1 leaves it just calls start.
func (g *Group) Start(start func() error) error {
	if len(g.v1) == 0 {
		return start()
	}
	to := make([]string, len(g.v1))
	back := make([]string, len(g.v1))
	for i, v := range g.v1 {
		to[i], back[i] = v.dir, v.home
	}
	return joinThread(to, start, back)
}

// joinThread moves the calling OS thread into the cgroups to, runs f, and
// moves it back. The goroutine is locked to its thread meanwhile, so
// nothing else runs there (and the Go runtime starts new threads from its
// template thread, never from a locked one).
func joinThread(to []string, f func() error, back []string) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := []byte(strconv.Itoa(unix.Gettid()))
	var err error
	moved := 0
	for _, d := range to {
		if err = os.WriteFile(filepath.Join(d, "tasks"), tid, 0); err != nil {
			err = fmt.Errorf("cgroup: join %s: %w", d, err)
			break
		}
		moved++
	}
	if err == nil {
		err = f()
	}
	for i := range moved {
		if berr := os.WriteFile(filepath.Join(back[i], "tasks"), tid, 0); berr != nil {
			err = errors.Join(err, fmt.Errorf("cgroup: a daemon thread stays in %s: %w", to[i], berr))
		}
	}
	return err
}

// Counters reads the run's event counters; a file that is not there
// (controller unavailable) counts 0.
func (g *Group) Counters() Counters {
	var c Counters
	c.PidsMax = eventKey(filepath.Join(g.dir, "pids.events"), "max")
	// One read of memory.events for its three keys: every run's exit
	// reads these (1,000 at once in a stop --all).
	mem := eventKeys(filepath.Join(g.dir, "memory.events"), "high", "max", "oom_kill")
	c.MemoryHigh, c.MemoryMax, c.OOMKills = mem[0], mem[1], mem[2]
	for _, v := range g.v1 {
		switch v.ctrl {
		case Pids:
			c.PidsMax += eventKey(filepath.Join(v.dir, "pids.events"), "max")
		case Memory:
			c.OOMKills += eventKey(filepath.Join(v.dir, "memory.oom_control"), "oom_kill")
			if b, err := os.ReadFile(filepath.Join(v.dir, "memory.failcnt")); err == nil {
				n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
				c.MemoryMax += n
			}
		}
	}
	return c
}

// OOMKills is Counters().OOMKills for less: the one counter every run's
// exit reads (1,000 at once in a stop --all).
func (g *Group) OOMKills() int64 {
	n := eventKey(filepath.Join(g.dir, "memory.events"), "oom_kill")
	for _, v := range g.v1 {
		if v.ctrl == Memory {
			n += eventKey(filepath.Join(v.dir, "memory.oom_control"), "oom_kill")
		}
	}
	return n
}

// eventKey reads "KEY N" from a flat-keyed cgroup file; 0 when absent.
func eventKey(path, key string) int64 { return eventKeys(path, key)[0] }

// eventKeys reads the values of keys from a flat-keyed file such as
// memory.events (0 for a key or a file that is not there).
func eventKeys(path string, keys ...string) []int64 {
	out := make([]int64, len(keys))
	b, err := readKernelFile(path)
	if err != nil {
		return out
	}
	for line := range bytes.Lines(b) {
		f := strings.Fields(string(line))
		if len(f) != 2 {
			continue
		}
		for i, k := range keys {
			if f[0] == k {
				out[i], _ = strconv.ParseInt(f[1], 10, 64)
			}
		}
	}
	return out
}

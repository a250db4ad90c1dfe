//go:build linux

package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Polling is only used where the kernel offers no event: a crashed
// daemon's leftovers at start, and a leaf whose events file cannot be
// watched.
const pollInterval = 20 * time.Millisecond

// Tree is one daemon's subtree: DIR/UNIT/run-ID leaves, one per run.
type Tree struct {
	mount   string // the cgroup2 mount holding dir
	dir     string
	id      uint64
	watcher *watcher

	// Resource controllers (limits.go), fixed at Create.
	v2   []string // enabled in the v2 subtree
	v1   []v1Hier // the subtree in v1 hierarchies, for the rest
	ctrl map[string]ControllerState
}

// Create makes the subtree name in the cgroup at loc (it must not exist
// yet: end a leftover one first with End) and checks that the daemon can
// use it: the kernel has cgroup.kill (Linux 5.14) and a process can be
// started straight into it (clone3 with CLONE_INTO_CGROUP, Linux 5.7, and
// write access to the cgroups involved). On any failure nothing is left
// behind.
func Create(loc Location, name string) (t *Tree, err error) {
	dir := filepath.Join(loc.Dir(), name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup: create %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			if rerr := unix.Rmdir(dir); rerr != nil {
				err = errors.Join(err, fmt.Errorf("cgroup: remove %s: %w", dir, rerr))
			}
		}
	}()
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		return nil, fmt.Errorf("cgroup: %s: no cgroup.kill (needs Linux 5.14): %w", dir, err)
	}
	if err := probeSpawn(dir); err != nil {
		return nil, err
	}
	id, err := DirID(dir)
	if err != nil {
		return nil, err
	}
	w, err := newWatcher()
	if err != nil {
		return nil, err
	}
	t = &Tree{mount: loc.Mount, dir: dir, id: id, watcher: w}
	t.setupControllers(name)
	return t, nil
}

// probeSpawn starts a process into dir the way every spawn will. The
// program does not exist, so the child fails at exec: ENOENT proves the
// clone into the cgroup worked, anything else is the clone's refusal.
func probeSpawn(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cgroup: open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	const missing = "/nonexistent/harness-cgroup-probe"
	_, err = syscall.ForkExec(missing, []string{missing}, &syscall.ProcAttr{
		Sys: &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd},
	})
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	if err == nil {
		return fmt.Errorf("cgroup: probe spawn into %s: %s ran", dir, missing)
	}
	return fmt.Errorf("cgroup: cannot start a process in %s: %w", dir, err)
}

// DirID returns the cgroup id of dir: its inode number, which the kernel
// never hands to another cgroup while it runs.
func DirID(dir string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, fmt.Errorf("cgroup: stat %s: %w", dir, err)
	}
	return st.Ino, nil
}

// Dir is the subtree's directory.
func (t *Tree) Dir() string { return t.dir }

// ID is the subtree's cgroup id (see DirID).
func (t *Tree) ID() uint64 { return t.id }

// NewRun makes the leaf of one run, DIR/UNIT/run-ID, with the limits l
// (limits.go), and opens it for SysProcAttr.CgroupFD; the process must be
// started through Group.Start. A unit's cgroup stays until Close; a run's
// leaf goes with Group.Remove.
func (t *Tree) NewRun(unit string, run uint64, l Limits) (g *Group, err error) {
	unitDir := filepath.Join(t.dir, escapeName(unit))
	if err := os.Mkdir(unitDir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("cgroup: unit %s: %w", unit, err)
	}
	if err := t.prepareUnit(unitDir); err != nil {
		return nil, err
	}
	leaf := "run-" + strconv.FormatUint(run, 10)
	v1, err := t.makeV1Leaves(escapeName(unit), leaf)
	defer func() {
		if err != nil {
			for _, v := range v1 {
				_ = removeDir(v.dir) // best effort: empty, never used
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(unitDir, leaf)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("cgroup: unit %s run %d: %w", unit, run, err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("cgroup: open %s: %w", dir, err)
	}
	g = &Group{mount: t.mount, dir: dir, fd: fd, w: t.watcher, v1: v1}
	if populated, perr := g.Populated(); perr != nil || populated {
		// Run ids never repeat: a populated leaf is not this run's.
		return nil, errors.Join(fmt.Errorf("cgroup: %s already holds processes", dir), perr, g.CloseFD())
	}
	if err = g.applyLimits(t.v2, l); err != nil {
		return nil, errors.Join(err, g.CloseFD())
	}
	return g, nil
}

// Close removes the subtree's cgroups, which must be empty by now, and
// stops its watcher.
func (t *Tree) Close() error {
	err := removeTree(t.dir)
	for _, h := range t.v1 {
		err = errors.Join(err, removeTree(h.dir))
	}
	return errors.Join(err, t.watcher.close())
}

// escapeName makes a unit name a single cgroup directory name: '/'
// (project units) and anything unusual become %XX.
func escapeName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' && i > 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// Group is the leaf cgroup of one run.
type Group struct {
	mount, dir string
	fd         int // -1 once closed
	w          *watcher
	v1         []v1Leaf // the run's leaves in v1 hierarchies (limits.go)
}

// Dir is the leaf's directory.
func (g *Group) Dir() string { return g.dir }

// FD is the open leaf for SysProcAttr{UseCgroupFD: true, CgroupFD: FD()}.
func (g *Group) FD() int { return g.fd }

// CloseFD closes the descriptor once the run's main process started.
func (g *Group) CloseFD() error {
	if g.fd < 0 {
		return nil
	}
	err := unix.Close(g.fd)
	g.fd = -1
	if err != nil {
		return fmt.Errorf("cgroup: close %s: %w", g.dir, err)
	}
	return nil
}

// Populated reports whether any process is in the leaf or below it.
func (g *Group) Populated() (bool, error) { return populated(g.dir) }

// Signal sends sig to every process in the leaf and below, reading the
// members again until a pass finds no new one (a process may fork while
// it is read). It returns how many processes it signalled.
func (g *Group) Signal(sig syscall.Signal) (int, error) { return signalAll(g.mount, g.dir, sig) }

// Kill ends every process in the leaf and below at once (cgroup.kill);
// nothing can fork its way out of it.
func (g *Group) Kill() error { return kill(g.dir) }

// WaitEmpty blocks until the leaf holds no process or done is closed. It
// sleeps on the leaf's cgroup.events through inotify, the kernel's
// notification of a populated change.
func (g *Group) WaitEmpty(done <-chan struct{}) error {
	return g.w.waitEmpty(g.dir, done)
}

// Remove deletes the empty leaf.
func (g *Group) Remove() error {
	errs := []error{g.CloseFD(), removeDir(g.dir)}
	for _, v := range g.v1 {
		errs = append(errs, removeDir(v.dir))
	}
	return errors.Join(errs...)
}

// removeDir deletes one empty cgroup. The kernel may report it busy for a
// moment after its last process exited (the exit is still being torn
// down), so EBUSY is retried briefly.
func removeDir(dir string) error {
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := unix.Rmdir(dir)
		switch {
		case err == nil, errors.Is(err, unix.ENOENT):
			return nil
		case errors.Is(err, unix.EBUSY) && time.Now().Before(deadline):
			time.Sleep(pollInterval)
		default:
			return fmt.Errorf("cgroup: remove %s: %w", dir, err)
		}
	}
}

// removeTree deletes dir and every cgroup below it, deepest first.
func removeTree(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cgroup: list %s: %w", dir, err)
	}
	var errs []error
	for _, d := range slices.Backward(dirs) {
		if err := removeDir(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// populated reads the "populated" key of dir/cgroup.events.
func populated(dir string) (bool, error) {
	b, err := readKernelFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return false, fmt.Errorf("cgroup: %w", err)
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("populated ")); ok {
			return string(v) != "0", nil
		}
	}
	return false, fmt.Errorf("cgroup: %s/cgroup.events has no populated key", dir)
}

func kill(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		return fmt.Errorf("cgroup: kill %s: %w", dir, err)
	}
	return nil
}

// procs lists the processes of dir and every cgroup below it.
func procs(dir string) ([]int, error) {
	var out []int
	if err := procsInto(dir, &out); err != nil {
		return nil, fmt.Errorf("cgroup: list processes of %s: %w", dir, err)
	}
	return out, nil
}

// procsInto appends the processes of dir and its descendants to out. It
// lists the directory only when its link count says it has child cgroups,
// and then unsorted (a signal to a run lists its leaf twice, for each of
// 1,000 runs in a stop --all): a leaf that is gone holds nothing.
func procsInto(dir string, out *[]int) error {
	gone := func(err error) bool {
		return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENODEV)
	}
	b, err := readKernelFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		if gone(err) {
			return nil
		}
		return err
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			*out = append(*out, pid)
		}
	}
	if sub, err := hasChildren(dir); err != nil || !sub {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		if gone(err) {
			return nil
		}
		return err
	}
	ents, err := d.ReadDir(-1)
	if cerr := d.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		if gone(err) {
			return nil
		}
		return err
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if err := procsInto(filepath.Join(dir, e.Name()), out); err != nil {
			return err
		}
	}
	return nil
}

// signalAll signals every process under dir (in the cgroup2 file system
// mounted at mount), pass after pass, until a pass finds none it has not
// signalled yet.
func signalAll(mount, dir string, sig syscall.Signal) (int, error) {
	hit := map[int]bool{}
	for {
		pids, err := procs(dir)
		if err != nil {
			return len(hit), err
		}
		fresh := 0
		for _, pid := range pids {
			if hit[pid] {
				continue
			}
			hit[pid] = true
			fresh++
			if err := signalMember(pid, mount, dir, sig); err != nil {
				return len(hit), err
			}
		}
		if fresh == 0 {
			return len(hit), nil
		}
	}
}

// signalMember signals pid only if it is still under dir: between reading
// cgroup.procs and the signal the pid may have been reused. A pidfd pins
// the process, so the membership check and the signal are about the same
// one.
func signalMember(pid int, mount, dir string, sig syscall.Signal) error {
	pfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil
		}
		return fmt.Errorf("cgroup: pidfd of %d: %w", pid, err)
	}
	defer unix.Close(pfd)
	if !inDir(pid, mount, dir) {
		return nil
	}
	if err := unix.PidfdSendSignal(pfd, sig, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("cgroup: signal %d: %w", pid, err)
	}
	return nil
}

// inDir reports whether pid's cgroup v2 directory is dir or below it.
func inDir(pid int, mount, dir string) bool {
	b, err := readKernelFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	path, ok := v2Path(b)
	if !ok {
		return false
	}
	abs := filepath.Join(mount, filepath.FromSlash(path))
	return abs == dir || strings.HasPrefix(abs, dir+"/")
}

// killWait bounds the wait after cgroup.kill: only a process stuck in the
// kernel (D state) delays its exit that long.
const killWait = 5 * time.Second

// End ends what a crashed daemon left in the cgroup at dir and below:
// SIGTERM to every process, up to grace for them to exit, then
// cgroup.kill; then it removes the cgroups. A missing dir is nothing to
// do. It returns how many processes it signalled.
func End(dir string, grace time.Duration) (int, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	mount, err := mountOf(dir)
	if err != nil {
		return 0, err
	}
	n, err := signalAll(mount, dir, syscall.SIGTERM)
	if err != nil {
		return n, fmt.Errorf("cgroup: end %s: %w", dir, err)
	}
	if n > 0 && !waitEmptyPoll(dir, grace) {
		if err := kill(dir); err != nil {
			return n, fmt.Errorf("cgroup: end %s: %w", dir, err)
		}
		if !waitEmptyPoll(dir, killWait) {
			left, _ := procs(dir)
			return n, fmt.Errorf("cgroup: end %s: %d processes survived cgroup.kill: %v", dir, len(left), left)
		}
	}
	return n, removeTree(dir)
}

// waitEmptyPoll polls dir until it holds no process or d passed.
func waitEmptyPoll(dir string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		busy, err := populated(dir)
		if err != nil || !busy {
			return true // gone counts as empty
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollInterval)
	}
}

// mountOf returns the cgroup2 mount point that holds dir.
func mountOf(dir string) (string, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("cgroup: %w", err)
	}
	best := ""
	for _, m := range cgroup2Mounts(mi) {
		if (dir == m.point || strings.HasPrefix(dir, m.point+"/")) && len(m.point) > len(best) {
			best = m.point
		}
	}
	if best == "" {
		return "", fmt.Errorf("cgroup: %s is on no cgroup2 mount", dir)
	}
	return best, nil
}

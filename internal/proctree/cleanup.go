package proctree

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/logkey"
)

// Polling /proc is the only way to see a non-child go away; these bound it.
const (
	pollInterval = 20 * time.Millisecond
	killWait     = 5 * time.Second // after SIGKILL only D-state can delay exit
)

// CleanupOptions tune CleanupLeftovers.
type CleanupOptions struct {
	Logger *slog.Logger  // default slog.Default()
	Grace  time.Duration // between SIGTERM and SIGKILL
	// EndCgroup ends a recorded cgroup subtree of this boot (kill what is
	// in it, remove it). Nil leaves recorded cgroups alone.
	EndCgroup func(LedgerCgroup) (int, error)
}

// CleanupLeftovers ends what a previous daemon recorded in the ledger at
// path and left running (after a crash or SIGKILL). Call it at daemon start
// before spawning anything and before OpenLedger.
//
// First the recorded cgroup subtrees of this boot go (EndCgroup). Then the
// targets are: processes carrying a recorded marker or a marker of a
// recorded instance, and the process groups that have such a member
// (including recorded groups, but only while a member still carries the
// marker: the pgid may have been reused); and, when the entry was recorded
// in this boot, the recorded main processes and members whose pid and
// start time still match, with every descendant of theirs. Identities
// never match a process that merely reuses a pid, and a reboot voids them,
// which is what makes ending unmarked processes (env -i) safe. Targets get
// SIGTERM, up to grace to exit, then SIGKILL. Nothing else is signalled. It
// returns how many distinct processes were signalled. When all targets are
// gone the ledger is truncated; when some survive SIGKILL it is kept for
// the next start and an error is returned. A missing ledger means nothing
// to do.
func CleanupLeftovers(path string, opt CleanupOptions) (killed int, err error) {
	logger := opt.Logger
	if logger == nil {
		logger = slog.Default()
	}
	data, err := readLedgerFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cleanup leftovers: %w", err)
	}
	boot, err := BootID()
	if err != nil {
		return 0, fmt.Errorf("cleanup leftovers: %w", err)
	}
	var errs []error
	for _, cg := range data.Cgroups {
		if cg.Boot != boot || opt.EndCgroup == nil {
			continue
		}
		n, err := opt.EndCgroup(cg)
		killed += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return killed, fmt.Errorf("cleanup leftovers: %w", err)
	}
	match := leftoverMatcher(data)
	idents := recordedIdents(data, boot)
	if match == nil && len(idents) == 0 {
		return killed, truncateLedger(path)
	}
	c := &cleanup{match: match, idents: idents, logger: logger, groups: map[int]uint64{}, hit: map[int]bool{}}
	if c.pass(syscall.SIGTERM) > 0 && !c.waitGone(opt.Grace) {
		c.pass(syscall.SIGKILL)
		if !c.waitGone(killWait) {
			left := c.remaining()
			logger.Error("proctree: leftovers survived SIGKILL", logkey.Ledger, path, logkey.Pids, left)
			return killed + len(c.hit), fmt.Errorf("cleanup leftovers: %d processes survived SIGKILL: %v", len(left), left)
		}
	}
	if len(c.hit) > 0 {
		logger.Info("proctree: ended leftovers of a previous daemon", logkey.Ledger, path,
			logkey.Processes, len(c.hit), logkey.Entries, len(data.Entries))
	}
	return killed + len(c.hit), truncateLedger(path)
}

// recordedIdents are the main processes and members of entries recorded
// in boot.
func recordedIdents(data ledgerFile, boot string) map[Ident]bool {
	out := map[Ident]bool{}
	for _, e := range data.Entries {
		if e.Boot != boot {
			continue
		}
		if e.Start != 0 && e.PID > 1 {
			out[Ident{PID: e.PID, Start: e.Start}] = true
		}
		for _, m := range e.Members {
			if m.PID > 1 {
				out[m] = true
			}
		}
	}
	return out
}

// leftoverMatcher accepts marker values recorded in data, exactly or by
// instance prefix; nil when data records nothing.
func leftoverMatcher(data ledgerFile) func(string) bool {
	markers := map[string]bool{}
	var prefixes []string
	addInstance := func(inst string) {
		if inst != "" {
			prefixes = append(prefixes, InstancePrefix(inst))
		}
	}
	for _, inst := range data.Instances {
		addInstance(inst)
	}
	for _, e := range data.Entries {
		if e.Marker != "" {
			markers[e.Marker] = true
		}
		addInstance(e.Instance)
	}
	if len(markers) == 0 && len(prefixes) == 0 {
		return nil
	}
	return func(v string) bool {
		if markers[v] {
			return true
		}
		for _, p := range prefixes {
			if strings.HasPrefix(v, p) {
				return true
			}
		}
		return false
	}
}

// cleanup tracks one CleanupLeftovers run.
type cleanup struct {
	match  func(string) bool // nil: no markers to look for (scan reads no environ)
	idents map[Ident]bool    // recorded processes and their descendants seen so far
	logger *slog.Logger
	// groups verified by a marked member at some pass, each with a
	// StartMark taken before that pass's scan (see heldGroups)
	groups map[int]uint64
	hit    map[int]bool // every pid signalled so far
}

// pass signals all current targets with sig and returns how many it hit.
// A group verified in an earlier pass stays a target while a member from
// then is alive (heldGroups).
func (c *cleanup) pass(sig syscall.Signal) int {
	mark := StartMark()
	procs := scan(c.match)
	for _, id := range descendantsOf(procs, c.idents) {
		c.idents[id] = true
	}
	marked := markedGroups(procs)
	for g := range marked {
		if _, ok := c.groups[g]; !ok {
			c.groups[g] = mark
		}
	}
	targets := heldGroups(procs, c.groups)
	for g := range marked {
		targets[g] = true
	}
	n := signalTargets(procs, targets, sig, c.logger)
	for _, p := range procs {
		if !p.live() {
			continue
		}
		if p.marked || targets[p.pgid] {
			c.hit[p.pid] = true
			continue
		}
		if !c.idents[p.ident()] {
			continue
		}
		sent, err := SignalIdent(p.ident(), sig)
		if err != nil {
			c.logger.Warn("proctree: signal recorded process", logkey.PID, p.pid, logkey.Signal, sig.String(), logkey.Err, err)
		}
		if sent {
			c.hit[p.pid] = true
			n++
		}
	}
	return n
}

// heldGroups returns the groups (each with the StartMark taken before the
// scan that verified it) that a live process started by that mark is still
// in. Such a member has held the id since the group was verified, so no
// one else can have it. A group whose members from then are all gone may
// have freed its id and a stranger's group taken it (pid_max may be
// 32768): members started later are not enough.
func heldGroups(procs []procInfo, groups map[int]uint64) map[int]bool {
	held := map[int]bool{}
	for _, p := range procs {
		if mark, ok := groups[p.pgid]; ok && p.live() && p.start <= mark {
			held[p.pgid] = true
		}
	}
	return held
}

// descendantsOf returns the live processes that descend from a live
// process in roots (by parent pid), roots excluded.
func descendantsOf(procs []procInfo, roots map[Ident]bool) []Ident {
	byPID := make(map[int]procInfo, len(procs))
	for _, p := range procs {
		byPID[p.pid] = p
	}
	memo := map[int]bool{}
	var under func(p procInfo, depth int) bool
	under = func(p procInfo, depth int) bool {
		if v, ok := memo[p.pid]; ok {
			return v
		}
		parent, ok := byPID[p.ppid]
		v := false
		if ok && depth < len(procs) && parent.live() {
			v = roots[parent.ident()] || under(parent, depth+1)
		}
		memo[p.pid] = v
		return v
	}
	var out []Ident
	for _, p := range procs {
		if p.live() && !roots[p.ident()] && under(p, 0) {
			out = append(out, p.ident())
		}
	}
	return out
}

// remaining lists live targets: marked processes and members of verified
// groups.
func (c *cleanup) remaining() []int {
	var left []int
	procs := scan(c.match)
	held := heldGroups(procs, c.groups)
	for _, p := range procs {
		if p.live() && (p.marked || held[p.pgid] || c.idents[p.ident()]) {
			left = append(left, p.pid)
		}
	}
	return left
}

// waitGone polls until no target is left or d passed.
func (c *cleanup) waitGone(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if len(c.remaining()) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollInterval)
	}
}

func truncateLedger(path string) error {
	if err := writeLedgerFile(path, ledgerFile{}, nil); err != nil {
		// A full disk has no room for the new file; emptying the old
		// one needs none (an empty file is an empty ledger).
		if terr := os.Truncate(path, 0); terr != nil {
			return fmt.Errorf("cleanup leftovers: truncate: %w", errors.Join(err, terr))
		}
	}
	return nil
}

package proctree

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"
)

// Polling /proc is the only way to see a non-child go away; these bound it.
const (
	pollInterval = 20 * time.Millisecond
	killWait     = 5 * time.Second // after SIGKILL only D-state can delay exit
)

// CleanupLeftovers ends what a previous daemon recorded in the ledger at
// path and left running (after a crash or SIGKILL). Call it at daemon start
// before spawning anything and before OpenLedger.
//
// Targets are processes carrying a recorded marker or a marker of a
// recorded instance, and the process groups that have such a member
// (including recorded groups, but only while a member still carries the
// marker: the pgid may have been reused). Targets get SIGTERM, up to grace
// to exit, then SIGKILL. Processes without a marker outside those groups
// are never signalled. It returns how many distinct processes were
// signalled. When all targets are gone the ledger is truncated; when some
// survive SIGKILL it is kept for the next start and an error is returned.
// A missing ledger means nothing to do.
func CleanupLeftovers(path string, logger *slog.Logger, grace time.Duration) (killed int, err error) {
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
	match := leftoverMatcher(data)
	if match == nil {
		return 0, truncateLedger(path)
	}

	c := &cleanup{match: match, logger: logger, groups: map[int]bool{}, hit: map[int]bool{}}
	if c.pass(syscall.SIGTERM) > 0 && !c.waitGone(grace) {
		c.pass(syscall.SIGKILL)
		if !c.waitGone(killWait) {
			left := c.remaining()
			logger.Error("proctree: leftovers survived SIGKILL", "ledger", path, "pids", left)
			return len(c.hit), fmt.Errorf("cleanup leftovers: %d processes survived SIGKILL: %v", len(left), left)
		}
	}
	if len(c.hit) > 0 {
		logger.Info("proctree: ended leftovers of a previous daemon", "ledger", path,
			"processes", len(c.hit), "entries", len(data.Entries))
	}
	return len(c.hit), truncateLedger(path)
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
	match  func(string) bool
	logger *slog.Logger
	groups map[int]bool // groups verified by a marked member at some pass
	hit    map[int]bool // every pid signalled so far
}

// pass signals all current targets with sig and returns how many it hit.
// A group verified in an earlier pass stays a target while it has live
// members: its id cannot be reused while they exist.
func (c *cleanup) pass(sig syscall.Signal) int {
	procs := scan(c.match)
	for g := range markedGroups(procs) {
		c.groups[g] = true
	}
	live := map[int]bool{}
	for _, p := range procs {
		if p.live() {
			live[p.pgid] = true
		}
	}
	targets := map[int]bool{}
	for g := range c.groups {
		if live[g] {
			targets[g] = true
		}
	}
	n := signalTargets(procs, targets, sig, c.logger)
	for _, p := range procs {
		if p.live() && (p.marked || targets[p.pgid]) {
			c.hit[p.pid] = true
		}
	}
	return n
}

// remaining lists live targets: marked processes and members of verified
// groups.
func (c *cleanup) remaining() []int {
	var left []int
	for _, p := range scan(c.match) {
		if p.live() && (p.marked || c.groups[p.pgid]) {
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
	if err := writeLedgerFile(path, ledgerFile{}); err != nil {
		return fmt.Errorf("cleanup leftovers: truncate: %w", err)
	}
	return nil
}

package proctree

import (
	"fmt"
	"log/slog"
	"os"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/logkey"
)

// EndDescendants ends every live descendant of the calling process:
// SIGTERM, up to grace for them to exit, then SIGKILL, re-reading /proc
// between signals so that a process forked meanwhile is hit too. A daemon
// calls it at shutdown once its units have stopped: what is left then was
// adopted by the daemon as subreaper (or outlived its unit's stop) and must
// not outlive the daemon. Only a process that is alone in its process may
// call it; a test running daemons in-process would end its own helpers.
// It returns how many processes it signalled.
func EndDescendants(grace time.Duration, logger *slog.Logger) (int, error) {
	if logger == nil {
		logger = slog.Default()
	}
	self := os.Getpid()
	hit := map[Ident]bool{}
	signal := func(sig syscall.Signal) int {
		left := 0
		for _, id := range descendantsOfSelf(scan(nil), self) {
			left++
			if hit[id] && sig == syscall.SIGTERM {
				continue // once is the courtesy; SIGKILL follows
			}
			sent, err := SignalIdent(id, sig)
			if err != nil {
				logger.Warn("proctree: signal adopted process", logkey.PID, id.PID, logkey.Signal, sig.String(), logkey.Err, err)
			}
			if sent {
				hit[id] = true
			}
		}
		return left
	}
	wait := func(sig syscall.Signal, d time.Duration) bool {
		deadline := time.Now().Add(d)
		for signal(sig) > 0 {
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(pollInterval)
		}
		return true
	}
	if !wait(syscall.SIGTERM, grace) && !wait(syscall.SIGKILL, killWait) {
		left := descendantsOfSelf(scan(nil), self)
		return len(hit), fmt.Errorf("end descendants: %d survived SIGKILL: %v", len(left), left)
	}
	if len(hit) > 0 {
		logger.Info("proctree: ended adopted processes", logkey.Processes, len(hit))
	}
	return len(hit), nil
}

// descendantsOfSelf lists the live processes whose parent chain leads to
// self.
func descendantsOfSelf(procs []procInfo, self int) []Ident {
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
		memo[p.pid] = false
		v := p.ppid == self
		if parent, ok := byPID[p.ppid]; !v && ok && depth < len(procs) {
			v = under(parent, depth+1)
		}
		memo[p.pid] = v
		return v
	}
	var out []Ident
	for _, p := range procs {
		if p.live() && under(p, 0) {
			out = append(out, p.ident())
		}
	}
	return out
}

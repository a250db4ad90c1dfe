package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/cgroup"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/proctree"
)

// The values of Options.Cgroup, and the modes daemon_info reports.
const (
	CgroupAuto = "auto"
	CgroupOff  = "off"

	modeCgroup   = "cgroup"
	modeFallback = "fallback"
)

// delegateHint tells a user without a writable cgroup how to get one.
const delegateHint = "run as root, or as a systemd user service with Delegate=yes"

// ownership is how this daemon holds its units' process trees, decided
// once at start: a cgroup v2 subtree (tree) or the fallback's tracker.
type ownership struct {
	info    api.Ownership
	tree    *cgroup.Tree
	tracker *proctree.Tracker
	log     *slog.Logger
	closed  bool
}

// setupOwnership ends what a crashed predecessor left behind, then picks
// the mode and opens the ledger. Nothing may be spawned before it returns.
//
// Leftovers: every cgroup subtree the ledger recorded in this boot whose
// cgroup id still matches, this socket's subtree in the daemon's own
// cgroup (only a daemon holding this socket's lock makes one), and the
// ledger's processes (see proctree.CleanupLeftovers).
func setupOwnership(ctx context.Context, mode, socket, ledgerPath string, log *slog.Logger) (*ownership, *proctree.Ledger, error) {
	switch mode {
	case "", CgroupAuto, CgroupOff:
	default:
		return nil, nil, fmt.Errorf("daemon: cgroup mode %q: want %q or %q", mode, CgroupAuto, CgroupOff)
	}
	loc, locErr := cgroup.Locate()
	name := cgroup.SubtreeName(socket)
	n, err := proctree.CleanupLeftovers(ledgerPath, proctree.CleanupOptions{
		Logger: log, Grace: leftoverGrace,
		EndCgroup: func(c proctree.LedgerCgroup) (int, error) { return endRecordedCgroup(c, log) },
	})
	if err != nil {
		return nil, nil, fmt.Errorf("daemon: clean up a previous daemon's processes: %w", err)
	}
	if locErr == nil {
		m, err := cgroup.End(filepath.Join(loc.Dir(), name), leftoverGrace)
		n += m
		if err != nil {
			return nil, nil, fmt.Errorf("daemon: clean up a previous daemon's cgroup: %w", err)
		}
	}
	if n > 0 {
		log.Warn("ended processes left behind by a previous daemon", logkey.Count, n)
	}
	ledger, err := proctree.OpenLedger(ledgerPath)
	if err != nil {
		return nil, nil, fmt.Errorf("daemon: %w", err)
	}

	o := &ownership{log: log, info: api.Ownership{Mode: modeFallback}}
	switch {
	case mode == CgroupOff:
		o.info.Reason = "cgroups disabled by --cgroup=off"
	case locErr != nil:
		o.info.Reason = locErr.Error() + fallbackNote
	default:
		tree, err := cgroup.Create(loc, name)
		if err != nil {
			o.info.Reason = err.Error() + "; " + delegateHint
			break
		}
		if err := ledger.AddCgroup(tree.Dir(), tree.ID()); err != nil {
			return nil, nil, errors.Join(fmt.Errorf("daemon: %w", err), tree.Close())
		}
		o.tree = tree
		o.info = api.Ownership{Mode: modeCgroup, Cgroup: tree.Dir(),
			Reason: fmt.Sprintf("cgroup v2 at %s; the daemon's cgroup %s is writable", loc.Mount, loc.Path)}
		for _, c := range tree.ControllerStates() {
			o.info.Controllers = append(o.info.Controllers, api.Controller{Name: c.Name, Version: c.Version, Why: c.Why})
		}
	}
	if o.tree == nil {
		o.tracker = proctree.NewTracker(ledger, log, 0)
		o.tracker.Start(ctx)
	}
	log.Info("process ownership", logkey.Mode, o.info.Mode, logkey.Reason, o.info.Reason, logkey.Cgroup, o.info.Cgroup)
	return o, ledger, nil
}

// endRecordedCgroup ends a recorded subtree if it is still that cgroup:
// same path, same cgroup id (the boot was checked by the caller).
func endRecordedCgroup(c proctree.LedgerCgroup, log *slog.Logger) (int, error) {
	id, err := cgroup.DirID(c.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if id != c.ID {
		log.Warn("a recorded cgroup path now names another cgroup; left alone", logkey.Path, c.Path)
		return 0, nil
	}
	return cgroup.End(c.Path, leftoverGrace)
}

// shutdown runs after every unit stopped: with ownProcess it ends every
// process still re-parented to the daemon, then whatever is left in the
// subtree, and releases the mode's resources.
func (o *ownership) shutdown(ownProcess bool) {
	if ownProcess {
		if _, err := proctree.EndDescendants(leftoverGrace, o.log); err != nil {
			o.log.Error("end adopted processes", logkey.Err, err)
		}
	}
	if o.tree != nil {
		if n, err := cgroup.End(o.tree.Dir(), leftoverGrace); err != nil {
			o.log.Error("end the daemon's cgroup", logkey.Err, err)
		} else if n > 0 {
			o.log.Warn("ended processes left in the daemon's cgroup", logkey.Count, n)
		}
	}
	o.close()
}

// close releases the tracker and the subtree (removing its empty cgroups).
// It is idempotent.
func (o *ownership) close() {
	if o.closed {
		return
	}
	o.closed = true
	if o.tracker != nil {
		o.tracker.Stop()
	}
	if o.tree != nil {
		if err := o.tree.Close(); err != nil {
			o.log.Error("remove the daemon's cgroup", logkey.Err, err)
		}
	}
}

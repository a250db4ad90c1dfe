package notify

import (
	"errors"
	"fmt"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/harness-dev/harness/internal/cgroup"
	"github.com/harness-dev/harness/internal/proctree"
)

// ownership holds command sinks' processes as the supervisor holds a
// unit's: a cgroup leaf per command run in the daemon's cgroup mode, and
// in every mode a tree marker in its environment, which a child keeps
// through setsid. A process group alone lets a setsid'd child go.
type ownership struct {
	cgroups  *cgroup.Tree // nil: fallback, the marker alone
	instance string       // the first part of every marker (proctree)
	seq      atomic.Uint64
}

// leftoverWait bounds the wait for a command's leftovers after SIGKILL.
const leftoverWait = 5 * time.Second

// held is one command run's hold on its processes.
type held struct {
	g      *cgroup.Group
	marker string
}

// place marks cmd, and puts it in a cgroup leaf of its own when there is a
// tree. cmd.Env and cmd.SysProcAttr must be set.
func (o *ownership) place(sink string, cmd *exec.Cmd) (*held, error) {
	seq := o.seq.Add(1)
	unit := "notify." + sink // a harness name has no "."
	h := &held{marker: proctree.NewMarker(o.instance, unit, seq)}
	cmd.Env = append(cmd.Env, proctree.MarkerEnv(h.marker))
	if o.cgroups == nil {
		return h, nil
	}
	g, err := o.cgroups.NewRun(unit, seq, cgroup.Limits{})
	if err != nil {
		return nil, fmt.Errorf("command sink cgroup: %w", err)
	}
	h.g = g
	cgroup.SpawnInto(cmd.SysProcAttr, g.FD())
	return h, nil
}

// start runs start (which forks the command) into the hold.
func (h *held) start(start func() error) error {
	if h.g == nil {
		return start()
	}
	err := h.g.Start(start)
	err = errors.Join(err, h.g.CloseFD())
	if err != nil {
		return errors.Join(err, h.g.Remove())
	}
	return nil
}

// end kills whatever of the run is left, once its main process has
// exited, and releases the hold.
func (h *held) end() error {
	if h.g == nil {
		_, err := proctree.EndMarked(h.marker, leftoverWait)
		return err
	}
	if err := h.g.Kill(); err != nil {
		return err
	}
	done := make(chan struct{})
	t := time.AfterFunc(leftoverWait, func() { close(done) })
	err := h.g.WaitEmpty(done)
	t.Stop()
	return errors.Join(err, h.g.Remove())
}

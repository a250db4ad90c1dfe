package control

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/logs"
)

// Trajectories: the transcript of a run of a harness that set
// harvest_trajectory = true, kept by internal/trajectory after the run ends.
// Capture happens in each unit's log OnEntry hook; these are the two read
// operations, list_trajectories and get_trajectory.

// harvestFlag is a unit's opt-in, read by its log hook without c.mu: the
// hook runs under the log's write lock, and c.mu may be held by a reload
// that waits for the unit's actor, which may be writing to the log.
type harvestFlag = atomic.Bool

// syncHarvest publishes whether the unit's current configuration opts in to
// trajectories, for its log hook. Call it wherever u.harness() changes (under c.mu).
func (u *unit) syncHarvest() {
	h := u.harness()
	u.harvest.Store(h != nil && h.HarvestTrajectory)
}

// trajectoryHook returns the OnEntry hook of unit name's log: it appends
// each entry to the trajectory store while on reports that the unit's
// current configuration opts in. It runs under the log's write lock, so it
// touches only the atomic flag and the store; a failure is logged once per
// unit until an append succeeds again.
func (c *Control) trajectoryHook(name string, on *harvestFlag) func(logs.Entry) {
	if c.opt.Trajectories == nil {
		return nil
	}
	var failing atomic.Bool
	return func(e logs.Entry) {
		if !on.Load() {
			return
		}
		if err := c.opt.Trajectories.Append(name, e); err != nil {
			if !failing.Swap(true) {
				c.log.Warn("trajectory: entries are not being kept", logkey.Unit, name, logkey.Err, err)
			}
			return
		}
		failing.Store(false)
	}
}

// harvesting resolves name to a harness whose current configuration opts
// in to trajectories.
func (c *Control) harvesting(name string) (*unit, error) {
	u, err := c.lookup(name)
	if err != nil {
		return nil, err
	}
	h := u.harness() // an atomic load: no lock needed
	if h == nil {
		return nil, errcode.Errorf(errcode.NotPermitted, "%s is an upstream MCP server; trajectories are kept for harnesses only", name)
	}
	if !h.HarvestTrajectory {
		return nil, errcode.Errorf(errcode.NotPermitted, "harness %s keeps no trajectories: set harvest_trajectory = true in [harness.%s]", name, name)
	}
	if c.opt.Trajectories == nil {
		return nil, errcode.Errorf(errcode.Internal, "this daemon has no trajectory store")
	}
	return u, nil
}

// ListTrajectories answers `list_trajectories`: the kept transcripts of a
// harness, oldest run first.
func (c *Control) ListTrajectories(_ context.Context, a api.NameArg) ([]api.TrajectoryInfo, error) {
	u, err := c.harvesting(a.Name)
	if err != nil {
		return nil, err
	}
	u.log.Flush()
	out := []api.TrajectoryInfo{}
	for _, m := range c.opt.Trajectories.List(u.name) {
		ti := api.TrajectoryInfo{Run: m.Run, Entries: m.Entries, Bytes: m.Bytes}
		if r, ok := c.opt.Runs.Get(m.Run); ok && r.Harness == u.name {
			ti.Cause, ti.StartedAt, ti.EndedAt, ti.ExitCode, ti.Signal = r.Cause, &r.StartedAt, r.EndedAt, r.ExitCode, r.Signal
		}
		out = append(out, ti)
	}
	return out, nil
}

// GetTrajectory answers `get_trajectory`: one run's entries after cursor,
// oldest first, capped like `logs` (max_bytes can only lower the cap).
func (c *Control) GetTrajectory(_ context.Context, a api.TrajectoryArgs) (api.Trajectory, error) {
	u, err := c.harvesting(a.Name)
	if err != nil {
		return api.Trajectory{}, err
	}
	if a.Run == 0 {
		return api.Trajectory{}, errcode.Errorf(errcode.InvalidArgument, "run is required (an id from list_trajectories)")
	}
	if a.MaxBytes < 0 {
		return api.Trajectory{}, errcode.Errorf(errcode.InvalidArgument, "max_bytes must be >= 0")
	}
	if a.MaxBytes == 0 || a.MaxBytes > DefaultMaxBytes {
		a.MaxBytes = DefaultMaxBytes
	}
	var after uint64
	if a.Cursor != nil {
		after = *a.Cursor
	}
	u.log.Flush()
	entries, truncated, err := c.opt.Trajectories.Read(u.name, a.Run, after, a.MaxBytes)
	if err != nil {
		return api.Trajectory{}, err
	}
	res := api.Trajectory{Name: u.name, Run: a.Run, Entries: entries, NextCursor: after, Truncated: truncated}
	if len(entries) > 0 {
		res.NextCursor = entries[len(entries)-1].ID
	}
	m, _ := c.opt.Trajectories.Get(u.name, a.Run)
	switch r, ok := c.opt.Runs.Get(a.Run); {
	case m.Capped:
		res.Note = fmt.Sprintf("run %d outgrew the per-harness trajectory bound; later entries were not kept", a.Run)
	case ok && !r.Ended():
		res.Note = fmt.Sprintf("run %d is still running; poll with next_cursor for more", a.Run)
	}
	return res, nil
}

//go:build !linux

package cgroup

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// ErrUnsupported is what every cgroup call fails with off Linux; its text
// is the reason daemon_info gives for the fallback ownership mode.
var ErrUnsupported = fmt.Errorf("cgroups are Linux-only: %w", errors.ErrUnsupported)

// Locate fails: there is no cgroup hierarchy to be in.
func Locate() (Location, error) { return Location{}, ErrUnsupported }

// Create fails; the daemon never gets a Tree off Linux.
func Create(Location, string) (*Tree, error) { return nil, ErrUnsupported }

// DirID fails: no path names a cgroup.
func DirID(string) (uint64, error) { return 0, ErrUnsupported }

// End has nothing to end: no cgroup can have been left behind.
func End(string, time.Duration) (int, error) { return 0, nil }

// Tree is never made off Linux (Create fails); its methods exist so the
// daemon and the supervisor compile unchanged.
type Tree struct{}

// Dir is empty.
func (t *Tree) Dir() string { return "" }

// ID is zero.
func (t *Tree) ID() uint64 { return 0 }

// NewRun fails.
func (t *Tree) NewRun(string, uint64, Limits) (*Group, error) { return nil, ErrUnsupported }

// Close has nothing to release.
func (t *Tree) Close() error { return nil }

// ControllerStates is empty: no controller exists.
func (t *Tree) ControllerStates() []ControllerState { return nil }

// Group is never made off Linux (NewRun fails).
type Group struct{}

// Dir is empty.
func (g *Group) Dir() string { return "" }

// FD is -1.
func (g *Group) FD() int { return -1 }

// CloseFD has nothing to close.
func (g *Group) CloseFD() error { return nil }

// Populated fails.
func (g *Group) Populated() (bool, error) { return false, ErrUnsupported }

// Signal fails.
func (g *Group) Signal(syscall.Signal) (int, error) { return 0, ErrUnsupported }

// Kill fails.
func (g *Group) Kill() error { return ErrUnsupported }

// WaitEmpty fails.
func (g *Group) WaitEmpty(<-chan struct{}) error { return ErrUnsupported }

// Remove has nothing to remove.
func (g *Group) Remove() error { return nil }

// Start just calls start.
func (g *Group) Start(start func() error) error { return start() }

// Counters are all zero.
func (g *Group) Counters() Counters { return Counters{} }

// OOMKills is 0: no cgroups here.
func (g *Group) OOMKills() int64 { return 0 }

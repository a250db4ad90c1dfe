package config

import "strings"

// Bootstrap is what makes a harness's worktree work on its first run and
// what it has around it (docs/design/resources.md): a setup and a
// teardown command, TCP ports of its own, and how a landed branch becomes
// a pull request.
type Bootstrap struct {
	// Setup (setup = ["prog", "arg"], no shell) runs in a new worktree
	// once, before the first run; a failure fails the start.
	Setup []string
	// Teardown (teardown) runs in the worktree before it is removed; a
	// failure is logged and the removal goes on.
	Teardown []string
	// Ports (ports = N, 0..64) free TCP ports given to every run as
	// HARNESS_PORT and HARNESS_PORTS, kept across runs and daemon
	// restarts.
	Ports int
	// PRCommand (pr_command) opens a pull request for `harness land
	// --pr`; {branch} in an argument is the harness's branch. nil: gh pr
	// create --fill --head {branch}, when gh is on PATH.
	PRCommand []string
}

// MaxPorts bounds ports = N.
const MaxPorts = 64

// bootstrapKey decodes the keys of Bootstrap; false for any other key.
func (d *decoder) bootstrapKey(k string, kp []string, val any, b *Bootstrap) bool {
	switch k {
	case "setup":
		b.Setup = d.argv(kp, val)
	case "teardown":
		b.Teardown = d.argv(kp, val)
	case "ports":
		b.Ports = d.count(kp, val, 0, MaxPorts)
	case "pr_command":
		b.PRCommand = d.argv(kp, val)
	default:
		return false
	}
	return true
}

// argv decodes a program and its arguments: a non-empty array of strings
// whose first element names the program.
func (d *decoder) argv(path []string, v any) []string {
	a, ok := d.strs(path, v)
	if !ok {
		return nil
	}
	if len(a) == 0 || strings.TrimSpace(a[0]) == "" {
		d.add(path, "must name a program: [\"prog\", \"arg\", …] (run without a shell)")
		return nil
	}
	return a
}

// checkBootstrap: setup, teardown and pr_command act on the harness's
// worktree, so they need one.
func (d *decoder) checkBootstrap(path []string, t map[string]any, h *Harness) {
	if h.Worktree != nil {
		return
	}
	for _, k := range []string{"setup", "teardown", "pr_command"} {
		if _, ok := t[k]; ok {
			d.add(child(path, k), "needs worktree: it runs in the harness's own git worktree")
		}
	}
}

package config

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Sandbox (sandbox) confines a harness's runs (docs/sandbox.md):
// `sandbox = { fs, network, allow, rw, deny, required, allow_agent_api }`
// on a harness or in [defaults]; a harness's keys override the defaults'
// one by one.
type Sandbox struct {
	FS      string   // fs: "off" (default) or "workdir"
	Network string   // network: "host" (default), "none" or "allow"
	Allow   []string // allow: host:port pairs network = "allow" reaches
	RW      []string // rw: more writable paths, absolute and existing
	Deny    []string // deny: unreadable paths, besides DefaultDeny
	// Required (required, default true) refuses a start whose sandbox
	// cannot be set up; false starts it with the levels reached shown.
	Required bool
	// AllowAgentAPI (allow_agent_api, default true) adds the agent's
	// model API, from its environment, to Allow.
	AllowAgentAPI bool
}

// DefaultDeny are unreadable under fs = "workdir" whatever deny says;
// "~" is the run's HOME. The daemon adds its state directory and the
// other harnesses' worktrees.
var DefaultDeny = []string{"~/.ssh", "~/.aws", "~/.gnupg"}

// Active reports whether s confines anything.
func (s Sandbox) Active() bool {
	return s.FS == "workdir" || s.Network == "none" || s.Network == "allow"
}

func defaultSandbox() Sandbox {
	return Sandbox{FS: "off", Network: "host", Required: true, AllowAgentAPI: true}
}

// defaults decodes [defaults].
func (d *decoder) defaults(v any, out *Defaults) {
	path := []string{"defaults"}
	t, ok := d.table(path, v)
	if !ok {
		return
	}
	for _, k := range sortedKeys(t) {
		kp := child(path, k)
		switch k {
		case "sandbox":
			out.Sandbox = d.sandbox(kp, t[k], defaultSandbox())
		default:
			d.unknown(kp, t[k])
		}
	}
}

// sandbox decodes a sandbox table over base.
func (d *decoder) sandbox(path []string, v any, base Sandbox) Sandbox {
	s := base
	s.Allow, s.RW, s.Deny = slices.Clone(base.Allow), slices.Clone(base.RW), slices.Clone(base.Deny)
	t, ok := d.table(path, v)
	if !ok {
		return s
	}
	for _, k := range sortedKeys(t) {
		kp, val := child(path, k), t[k]
		switch k {
		case "fs":
			if x, ok := d.str(kp, val); ok {
				if x != "off" && x != "workdir" {
					d.add(kp, `invalid fs %q (want "workdir" or "off")`, x)
				}
				s.FS = x
			}
		case "network":
			if x, ok := d.str(kp, val); ok {
				if x != "host" && x != "none" && x != "allow" {
					d.add(kp, `invalid network %q (want "host", "none" or "allow")`, x)
				}
				s.Network = x
			}
		case "allow":
			list, _ := d.strs(kp, val)
			for _, a := range list {
				if err := checkHostPort(a); err != "" {
					d.add(kp, "invalid entry %q: %s", a, err)
				}
			}
			s.Allow = list
		case "rw":
			s.RW = d.paths(kp, val)
			for _, p := range s.RW {
				if !filepath.IsAbs(p) {
					d.add(kp, "%q is relative: give an absolute path (or ~/...)", p)
				} else if _, err := os.Stat(p); err != nil {
					d.add(kp, "%q does not exist", p)
				}
			}
		case "deny":
			s.Deny = d.paths(kp, val)
			for _, p := range s.Deny {
				if !filepath.IsAbs(p) {
					d.add(kp, "%q is relative: give an absolute path (or ~/...)", p)
				}
			}
		case "required":
			s.Required = d.boolean(kp, val)
		case "allow_agent_api":
			s.AllowAgentAPI = d.boolean(kp, val)
		default:
			d.unknown(kp, val)
		}
	}
	if len(s.Allow) > 0 && s.Network != "allow" {
		d.add(child(path, "allow"), `has no effect unless network = "allow" (network is %q)`, s.Network)
	}
	return s
}

// checkSandbox runs once the harness's table is read: deny must not hide
// the workdir, nor anything within it.
func (d *decoder) checkSandbox(path []string, h *Harness) {
	if h.Sandbox.FS != "workdir" || h.Workdir == "" {
		return
	}
	wd := filepath.Clean(h.Workdir)
	for _, p := range h.Sandbox.Deny {
		p = filepath.Clean(p)
		if pathWithin(wd, p) || pathWithin(p, wd) {
			d.add(child(path, "sandbox", "deny"), "%q overlaps the workdir %q: the agent could not work there", p, wd)
		}
	}
}

func pathWithin(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// checkHostPort says what is wrong with a host:port allow entry, or "".
func checkHostPort(a string) string {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return "want host:port (\"api.example.com:443\", \"[::1]:8080\")"
	}
	if host == "" || strings.ContainsAny(host, "/ *") {
		return "want a host name or IP address before the port"
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "the port must be a number from 1 to 65535"
	}
	return ""
}

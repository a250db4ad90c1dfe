// Package sandbox confines a harness's processes (docs/design/sandbox.md):
// files by Landlock, network by a network namespace of their own, with
// only a loopback and, for network = "allow", the egress proxy
// (internal/egress) the daemon serves on a listener made inside it.
//
// Go cannot run code between fork and exec, so the child is a shim: the
// same binary run as `harness sandbox-exec SPEC PROG ARGS...` (Exec),
// started in the new namespaces, which applies the spec and then execs the
// program in place. The run's process is then the program itself, in the
// run's session, process group and cgroup like any other.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Files levels.
const (
	FSOff      = "off"     // not asked for
	FSWorkdir  = "workdir" // asked for: writes only in the workdir and the listed places
	FSNotBuilt = "none"    // asked for, not reached (required = false)
)

// Network levels.
const (
	NetHost  = "host"  // unchanged
	NetNone  = "none"  // a network namespace with only its own loopback
	NetAllow = "allow" // the namespace plus the egress proxy for the allow list
)

// Subcommand is the hidden verb of the harness binary that runs the shim.
const Subcommand = "sandbox-exec"

// ProxyPort is the loopback port of the egress proxy inside a network
// namespace of network = "allow": the namespace is the run's own, so a
// fixed port never collides.
const ProxyPort = 3128

// Policy is what the configuration asks for one harness, paths absolute
// ("~/" still unexpanded where the run's HOME decides: Deny, StateDirs).
type Policy struct {
	FS       string   // FSOff or FSWorkdir
	Network  string   // NetHost, NetNone or NetAllow
	Allow    []string // host:port pairs network = "allow" reaches
	RW       []string // more writable paths
	Deny     []string // unreadable paths
	Required bool     // refuse the start when a level cannot be reached
	// StateDirs are the agent's own writable state directories (the
	// adapter names them; made if missing), StateFiles its state files;
	// TmpDir is the run's private temporary directory: mounted over /tmp
	// where a mount namespace is permitted, else only TMPDIR.
	StateDirs  []string
	StateFiles []string
	TmpDir     string
	// Read are readable even within Deny: the run's wiring files.
	Read []string
	// Keep are more paths the run must still reach (the daemon's socket):
	// one below /tmp keeps /tmp shared (Place).
	Keep []string
}

// Active reports whether p confines anything.
func (p *Policy) Active() bool {
	return p != nil && (p.FS == FSWorkdir || p.Network == NetNone || p.Network == NetAllow)
}

// Levels is what a run reached, as describe shows it.
type Levels struct {
	FS      string `json:"fs"`      // "landlock-vN", "off" or "none"
	Network string `json:"network"` // "host", "netns", "netns+proxy" or "none"
	// Tmp is TmpLevelMount (a private /tmp) or TmpLevelDir (only TMPDIR).
	Tmp string `json:"tmp,omitempty"`
	// Missing says why a level asked for was not reached.
	Missing string `json:"missing,omitempty"`
}

// Private temporary directory levels (Levels.Tmp).
const (
	TmpLevelMount = "mount" // the run's directory is mounted over /tmp, TMPDIR=/tmp
	TmpLevelDir   = "dir"   // /tmp stays shared and unwritable; TMPDIR is the run's directory
)

// FilesDenials is what describe says of file refusals where nothing
// follows the kernel's audit records (internal/kaudit) for the run: the
// kernel tells only the audit subsystem about a Landlock denial
// (docs/design/sandbox.md).
const FilesDenials = "not counted: the kernel reports Landlock denials only to the audit log"

// Caps is what this machine offers, probed once (Probe).
type Caps struct {
	Landlock int    // Landlock ABI; 0 without
	UserNS   bool   // user and network namespaces may be made unprivileged
	MountNS  bool   // ... and in them a mount over /tmp
	Why      string // why something is missing
}

// ErrUnavailable is a sandbox that cannot be set up while required.
var ErrUnavailable = errors.New("sandbox unavailable")

// Plan decides the levels of a run of p on a machine with caps: an error
// (ErrUnavailable) when p is required and a level cannot be reached.
func Plan(p *Policy, caps Caps) (Spec, Levels, error) {
	lv := Levels{FS: FSOff, Network: NetHost}
	var spec Spec
	var missing []string
	if p.FS == FSWorkdir {
		if caps.Landlock > 0 {
			lv.FS = fmt.Sprintf("landlock-v%d", caps.Landlock)
			spec.FS = true
			spec.RW = append(append(append([]string{}, p.RW...), p.StateDirs...), p.StateFiles...)
			spec.MakeDirs = p.StateDirs
			spec.Deny = p.Deny
			spec.Read = p.Read
			if p.TmpDir != "" {
				spec.RW = append(spec.RW, p.TmpDir)
				lv.Tmp = TmpLevelDir
				if caps.MountNS {
					spec.Tmp = p.TmpDir
					lv.Tmp = TmpLevelMount
				}
			}
		} else {
			lv.FS = FSNotBuilt
			missing = append(missing, "files: the kernel has no Landlock"+why(caps))
		}
	}
	if p.Network == NetNone || p.Network == NetAllow {
		if caps.UserNS {
			spec.Net = p.Network
			lv.Network = "netns"
			if p.Network == NetAllow {
				lv.Network = "netns+proxy"
			}
		} else {
			lv.Network = FSNotBuilt
			missing = append(missing, "network: no user and network namespaces"+why(caps))
		}
	}
	if len(missing) > 0 {
		lv.Missing = strings.Join(missing, "; ")
		if p.Required {
			return Spec{}, lv, fmt.Errorf("%w: %s (set sandbox.required = false to start with what can be reached)", ErrUnavailable, lv.Missing)
		}
	}
	return spec, lv, nil
}

func why(c Caps) string {
	if c.Why == "" {
		return ""
	}
	return " (" + c.Why + ")"
}

// tmpPath is the shared temporary directory a run may get its own over.
const tmpPath = "/tmp"

// Place settles the private /tmp at the spawn, when the run's workdir,
// HOME and program are known: it is mounted only when none of them nor
// of p's paths lies below /tmp, since Landlock rules reach down through
// mounts and the private /tmp's would grant everything bound below it.
// Otherwise the run keeps only its TMPDIR (lv.Tmp "dir"); the returned
// path says why, "" when nothing changed.
func Place(spec *Spec, lv *Levels, p *Policy, workdir, home, prog string) string {
	if spec.Tmp == "" {
		return ""
	}
	need := []string{workdir, home, prog}
	for _, l := range [][]string{p.RW, p.StateDirs, p.StateFiles, p.Read, p.Keep} {
		for _, x := range l {
			need = append(need, expandHome(x, home))
		}
	}
	for _, n := range need {
		if n != "" && filepath.IsAbs(n) && within(resolve(n), tmpPath) {
			spec.Tmp, lv.Tmp = "", TmpLevelDir
			return n
		}
	}
	return ""
}

// Spec is what the shim applies, passed to it as JSON.
type Spec struct {
	FS   bool     `json:"fs,omitempty"`   // Landlock: write only Dir and RW, read all but Deny
	RW   []string `json:"rw,omitempty"`   // writable hierarchies besides the workdir
	Deny []string `json:"deny,omitempty"` // unreadable; "~/" is the run's HOME
	Read []string `json:"read,omitempty"` // readable even within Deny
	// MakeDirs are made (0700) before the rules, so a state directory the
	// agent would make on first run is writable.
	MakeDirs []string `json:"make_dirs,omitempty"`
	// Net is "" (host), NetNone or NetAllow: the shim was started in new
	// user and network namespaces and brings their loopback up; for
	// NetAllow it hands a listener on 127.0.0.1:ProxyPort to the daemon on
	// fd 3.
	Net string `json:"net,omitempty"`
	// Tmp, when set, is mounted over /tmp in a mount namespace of the
	// run's own (started in new user and mount namespaces).
	Tmp string `json:"tmp,omitempty"`
}

// Namespaced reports whether the shim must start in new namespaces.
func (s Spec) Namespaced() bool { return s.Net != "" || s.Tmp != "" }

// expandHome expands a leading "~" in p to home.
func expandHome(p, home string) string {
	if home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		return filepath.Join(home, p[1:])
	}
	return p
}

// ProxyEnv is the environment of a run with network = "allow": every
// spelling of the proxy variables, pointing at the proxy inside the
// namespace.
func ProxyEnv() []string {
	u := fmt.Sprintf("http://127.0.0.1:%d", ProxyPort)
	return []string{"HTTPS_PROXY=" + u, "HTTP_PROXY=" + u, "https_proxy=" + u, "http_proxy=" + u,
		"ALL_PROXY=" + u, "all_proxy=" + u, "NO_PROXY=", "no_proxy="}
}

// self is the harness binary the shim runs from.
func self() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("sandbox: find the harness binary: %w", err)
	}
	return exe, nil
}

// Package service installs the daemon as a service of the machine's own
// service manager (docs/design/remote.md): a systemd unit on Linux (a user unit by
// default, Delegate=yes so cgroup mode has a subtree of its own), a launchd
// agent on macOS. It writes only files that carry its marker, so it never
// overwrites or removes a unit someone else wrote, and installing twice
// changes nothing.
package service

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/harness-dev/harness/internal/errcode"
)

// Marker is the first line of every file this package writes.
const Marker = "# Written by `harness service install`; `harness service uninstall` removes it."

// plistMarker is Marker inside a launchd property list (an XML comment).
const plistMarker = "<!-- Written by `harness service install`; `harness service uninstall` removes it. -->"

// Names of the service in each manager.
const (
	UnitName    = "harness.service"
	LaunchLabel = "dev.harness.daemon"
)

// Spec is what a service runs and where it is written.
type Spec struct {
	// GOOS picks the service manager: "darwin" is launchd, anything else
	// systemd.
	GOOS string
	// System asks for a system-wide service (systemd only): written under
	// /etc/systemd/system and started at boot, as root.
	System bool
	// Exe is the absolute path of the harness binary.
	Exe string
	// Args follow Exe: "daemon" and the flags the user gave (--config…).
	Args []string
	// Home and ConfigHome (XDG_CONFIG_HOME, "" for Home/.config) locate a
	// user service.
	Home, ConfigHome string
}

// Path is where the service file of s lives.
func (s Spec) Path() string {
	switch {
	case s.GOOS == "darwin":
		return filepath.Join(s.Home, "Library", "LaunchAgents", LaunchLabel+".plist")
	case s.System:
		return filepath.Join("/etc/systemd/system", UnitName)
	}
	cfg := s.ConfigHome
	if cfg == "" {
		cfg = filepath.Join(s.Home, ".config")
	}
	return filepath.Join(cfg, "systemd", "user", UnitName)
}

// Render returns the service file of s.
func (s Spec) Render() ([]byte, error) {
	if !filepath.IsAbs(s.Exe) {
		return nil, fmt.Errorf("service: the binary %q is not an absolute path: %w", s.Exe, errcode.ErrInvalidArgument)
	}
	if s.GOOS == "darwin" {
		if s.System {
			return nil, fmt.Errorf("service: --system is for systemd; on macOS the daemon runs as a launchd agent of the user: %w", errcode.ErrInvalidArgument)
		}
		return s.plist(), nil
	}
	return s.unit(), nil
}

// unit is a systemd unit. Delegate=yes hands the daemon its cgroup
// subtree (cgroup mode); KillMode=mixed lets the daemon stop its own
// harnesses on SIGTERM before systemd ends what is left.
func (s Spec) unit() []byte {
	var b bytes.Buffer
	fmt.Fprintln(&b, Marker)
	fmt.Fprintln(&b, "[Unit]")
	fmt.Fprintln(&b, "Description=harness: supervisor of agent CLIs and their MCP gateway")
	fmt.Fprintln(&b, "After=network.target")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "[Service]")
	fmt.Fprintln(&b, "Type=simple")
	fmt.Fprintf(&b, "ExecStart=%s\n", systemdCommand(append([]string{s.Exe}, s.Args...)))
	fmt.Fprintln(&b, "ExecReload=/bin/kill -HUP $MAINPID")
	fmt.Fprintln(&b, "Restart=on-failure")
	fmt.Fprintln(&b, "RestartSec=2")
	fmt.Fprintln(&b, "Delegate=yes")
	fmt.Fprintln(&b, "KillMode=mixed")
	fmt.Fprintln(&b, "TimeoutStopSec=60")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "[Install]")
	if s.System {
		fmt.Fprintln(&b, "WantedBy=multi-user.target")
	} else {
		fmt.Fprintln(&b, "WantedBy=default.target")
	}
	return b.Bytes()
}

// systemdCommand quotes argv for ExecStart: each word in double quotes
// when it needs them, with backslash, quote and $ escaped, % doubled.
func systemdCommand(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		a = strings.ReplaceAll(a, "%", "%%")
		if a != "" && !strings.ContainsAny(a, " \t\"'\\$;") {
			words[i] = a
			continue
		}
		r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `$$`)
		words[i] = `"` + r.Replace(a) + `"`
	}
	return strings.Join(words, " ")
}

// plist is a launchd agent that keeps the daemon running.
func (s Spec) plist() []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(plistMarker + "\n")
	b.WriteString(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n")
	b.WriteString("<plist version=\"1.0\">\n<dict>\n")
	fmt.Fprintf(&b, "  <key>Label</key>\n  <string>%s</string>\n", LaunchLabel)
	b.WriteString("  <key>ProgramArguments</key>\n  <array>\n")
	for _, a := range append([]string{s.Exe}, s.Args...) {
		fmt.Fprintf(&b, "    <string>%s</string>\n", xmlEscape(a))
	}
	b.WriteString("  </array>\n")
	b.WriteString("  <key>RunAtLoad</key>\n  <true/>\n")
	b.WriteString("  <key>KeepAlive</key>\n  <dict>\n    <key>SuccessfulExit</key>\n    <false/>\n  </dict>\n")
	b.WriteString("</dict>\n</plist>\n")
	return b.Bytes()
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;").Replace(s)
}

// Ours reports whether the file at path was written by this package.
func Ours(content []byte) bool {
	return bytes.Contains(firstLines(content, 2), []byte(Marker)) || bytes.Contains(firstLines(content, 2), []byte(plistMarker))
}

func firstLines(b []byte, n int) []byte {
	end := 0
	for i := 0; i < n; i++ {
		j := bytes.IndexByte(b[end:], '\n')
		if j < 0 {
			return b
		}
		end += j + 1
	}
	return b[:end]
}

// ErrNotOurs is wrapped when a service file exists that this package did
// not write.
var ErrNotOurs = errors.New("not written by harness service install")

// Outcome says what Write did.
type Outcome string

// Outcomes of Write and Remove.
const (
	Written   Outcome = "written"
	Unchanged Outcome = "unchanged"
	Removed   Outcome = "removed"
	Absent    Outcome = "absent"
)

// Write puts the service file of s in place: unchanged when it already
// says the same, refused (ErrNotOurs, not_permitted) when a file there
// was not written by harness.
func Write(s Spec) (Outcome, error) {
	want, err := s.Render()
	if err != nil {
		return "", err
	}
	path := s.Path()
	have, err := os.ReadFile(path)
	switch {
	case err == nil && bytes.Equal(have, want):
		return Unchanged, nil
	case err == nil && !Ours(have):
		return "", fmt.Errorf("service: %s exists and was %w: leaving it alone (remove it yourself to let harness write its own): %w", path, ErrNotOurs, errcode.ErrNotPermitted)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("service: read %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("service: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, want, 0o644); err != nil {
		return "", fmt.Errorf("service: write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("service: %w", err)
	}
	return Written, nil
}

// Remove deletes the service file of s if harness wrote it: absent when
// there is none, refused (ErrNotOurs) when someone else wrote it.
func Remove(s Spec) (Outcome, error) {
	path := s.Path()
	have, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return Absent, nil
	case err != nil:
		return "", fmt.Errorf("service: read %s: %w", path, err)
	case !Ours(have):
		return "", fmt.Errorf("service: %s was %w: leaving it alone: %w", path, ErrNotOurs, errcode.ErrNotPermitted)
	}
	if err := os.Remove(path); err != nil {
		return "", fmt.Errorf("service: %w", err)
	}
	return Removed, nil
}

// Manager runs the service manager's commands for s: systemctl (with
// --user unless System) or launchctl. Bin overrides the program (tests, or
// a systemctl elsewhere on PATH); nil Run uses os/exec.
type Manager struct {
	Spec Spec
	Bin  string
}

// argv is the command line of a manager action: enable, start, disable,
// stop, reload (daemon-reload), status.
func (m Manager) argv(action string) []string {
	if m.Spec.GOOS == "darwin" {
		bin := or(m.Bin, "launchctl")
		domain := fmt.Sprintf("gui/%d", os.Getuid())
		switch action {
		case "enable", "start":
			return []string{bin, "bootstrap", domain, m.Spec.Path()}
		case "disable", "stop":
			return []string{bin, "bootout", domain + "/" + LaunchLabel}
		case "status":
			return []string{bin, "print", domain + "/" + LaunchLabel}
		}
		return nil
	}
	argv := []string{or(m.Bin, "systemctl")}
	if !m.Spec.System {
		argv = append(argv, "--user")
	}
	switch action {
	case "reload":
		return append(argv, "daemon-reload")
	case "status":
		return append(argv, "is-active", UnitName)
	}
	return append(argv, action, UnitName)
}

// Do runs action and returns its combined output, trimmed; an action the
// manager has no command for (launchd's daemon-reload) does nothing.
func (m Manager) Do(action string) (string, error) {
	argv := m.argv(action)
	if argv == nil {
		return "", nil
	}
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	text := strings.TrimSpace(string(out))
	if err != nil {
		if text == "" {
			text = err.Error()
		}
		return text, fmt.Errorf("%s: %s", strings.Join(argv, " "), firstLine(text))
	}
	return text, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

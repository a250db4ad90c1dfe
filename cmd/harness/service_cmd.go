package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/service"
)

// managerEnv names the variable that replaces systemctl (launchctl on
// macOS): one that is not on PATH, or a stand-in where no service manager
// runs.
const managerEnv = "HARNESS_SERVICE_MANAGER"

// serviceReport is what install, status and uninstall print with --json.
type serviceReport struct {
	Path    string          `json:"path"`
	Outcome string          `json:"outcome,omitempty"` // written, unchanged, removed, absent
	Ours    *bool           `json:"written_by_harness,omitempty"`
	Current *bool           `json:"current,omitempty"` // status: the file is what install would write now
	Manager []managerAction `json:"manager,omitempty"`
}

type managerAction struct {
	Command string `json:"command"`
	OK      bool   `json:"ok"`
	Output  string `json:"output,omitempty"`
}

// serviceCmd installs the daemon as a systemd unit or launchd agent
// (docs/design/remote.md).
func serviceCmd(g *globals) *cobra.Command {
	var system, now bool
	cmd := &cobra.Command{
		Use:   "service",
		Short: "Install the daemon as a service: a systemd unit (Linux) or a launchd agent (macOS)",
	}
	spec := func() (service.Spec, error) {
		exe, err := os.Executable()
		if err != nil {
			return service.Spec{}, fmt.Errorf("service: find this program: %w", err)
		}
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
		home, err := os.UserHomeDir()
		if err != nil {
			return service.Spec{}, fmt.Errorf("service: %w", err)
		}
		args := []string{"daemon"}
		for _, f := range []struct{ flag, v string }{{"--config", g.config}, {"--socket", g.socket}, {"--state-dir", g.stateDir}} {
			if flag, v := f.flag, f.v; v != "" {
				abs, err := filepath.Abs(v)
				if err != nil {
					return service.Spec{}, fmt.Errorf("service: %s: %w", flag, err)
				}
				args = append(args, flag, abs)
			}
		}
		return service.Spec{GOOS: runtime.GOOS, System: system, Exe: exe, Args: args,
			Home: home, ConfigHome: os.Getenv("XDG_CONFIG_HOME")}, nil
	}
	// manager is the service manager for s: systemctl or launchctl, or
	// what HARNESS_SERVICE_MANAGER names.
	manager := func(s service.Spec) service.Manager { return service.Manager{Spec: s, Bin: os.Getenv(managerEnv)} }
	run := func(s service.Spec, r *serviceReport, actions ...string) error {
		m := manager(s)
		for _, a := range actions {
			out, err := m.Do(a)
			r.Manager = append(r.Manager, managerAction{Command: a, OK: err == nil, Output: out})
			if err != nil {
				return err
			}
		}
		return nil
	}
	report := func(w io.Writer, r serviceReport, err error) error {
		if g.json {
			if err != nil {
				return err
			}
			return emit(w, r)
		}
		if r.Outcome != "" {
			fmt.Fprintf(w, "%s: %s\n", r.Path, r.Outcome)
		}
		for _, a := range r.Manager {
			if a.OK && a.Output != "" {
				fmt.Fprintf(w, "%s: %s\n", a.Command, a.Output)
			}
		}
		return err
	}

	install := &cobra.Command{
		Use:   "install",
		Short: "Write the service file (a user unit unless --system) and enable it; --now starts it too",
		Long: `install writes harness.service (~/.config/systemd/user, or /etc/systemd/system
with --system; Delegate=yes so cgroup mode works) or, on macOS, the launchd agent
~/Library/LaunchAgents/dev.harness.daemon.plist, running "harness daemon" with
the --config, --state-dir and --socket given here. Installing twice changes
nothing; a file there that harness did not write is left alone (exit 1).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := spec()
			if err != nil {
				return err
			}
			r := serviceReport{Path: s.Path()}
			outcome, err := service.Write(s)
			if err != nil {
				return err
			}
			r.Outcome = string(outcome)
			actions := []string{"reload", "enable"}
			if now {
				actions = append(actions, "start")
			}
			if err := run(s, &r, actions...); err != nil {
				return report(cmd.OutOrStdout(), r, fmt.Errorf("service: %s is %s, but the service manager refused: %w", r.Path, outcome, err))
			}
			return report(cmd.OutOrStdout(), r, nil)
		},
	}
	install.Flags().BoolVar(&now, "now", false, "start the service now too")
	addJSON(install, g)

	status := &cobra.Command{
		Use:   "status",
		Short: "Say where the service file is, whether harness wrote it, and whether the service runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := spec()
			if err != nil {
				return err
			}
			r := serviceReport{Path: s.Path()}
			have, err := os.ReadFile(r.Path)
			if err != nil {
				if !os.IsNotExist(err) {
					return fmt.Errorf("service: %w", err)
				}
				r.Outcome = string(service.Absent)
				return report(cmd.OutOrStdout(), r, nil)
			}
			ours := service.Ours(have)
			want, err := s.Render()
			if err != nil {
				return err
			}
			current := string(have) == string(want)
			r.Ours, r.Current = &ours, &current
			state, merr := manager(s).Do("status")
			r.Manager = []managerAction{{Command: "status", OK: merr == nil, Output: state}}
			if !g.json {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: written by harness: %t; as install would write it now: %t\nstate: %s\n", r.Path, ours, current, state)
				return nil
			}
			return emit(cmd.OutOrStdout(), r)
		},
	}
	addJSON(status, g)

	uninstall := &cobra.Command{
		Use:   "uninstall",
		Short: "Stop and disable the service, and remove the file harness wrote (never one it did not)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := spec()
			if err != nil {
				return err
			}
			r := serviceReport{Path: s.Path()}
			if have, err := os.ReadFile(r.Path); err == nil && service.Ours(have) {
				// Stopping a service that is not loaded fails; the removal
				// below is what uninstall promises.
				_ = run(s, &r, "disable", "stop")
			}
			outcome, err := service.Remove(s)
			if err != nil {
				return err
			}
			r.Outcome = string(outcome)
			if outcome == service.Removed {
				_ = run(s, &r, "reload")
			}
			return report(cmd.OutOrStdout(), r, nil)
		},
	}
	addJSON(uninstall, g)
	cmd.PersistentFlags().BoolVar(&system, "system", false, "a system unit (/etc/systemd/system, started at boot) instead of a user unit")
	cmd.AddCommand(install, status, uninstall)
	return cmd
}

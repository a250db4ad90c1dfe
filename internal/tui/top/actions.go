package top

import (
	"context"
	"io"
	"os"
	"os/exec"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
)

// ExecAttach is an Options.Attach that runs `exe --socket socket attach
// UNIT` (harness attach) on this process's own terminal: the dashboard
// steps aside while it runs and comes back when it detaches (Ctrl-]) or
// the unit stops.
func ExecAttach(exe, socket string) func(unit string) tea.ExecCommand {
	return func(unit string) tea.ExecCommand {
		c := exec.Command(exe, "--socket", socket, "attach", unit)
		// The real terminal, not bubbletea's wrapped input: attach puts
		// it in raw mode and needs it to be a terminal.
		c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
		return attachCommand{c}
	}
}

// HostsAttach is RunHosts' attach: `exe --host ADDR attach UNIT` for an
// ssh:// host, `exe --socket ADDR attach UNIT` for a local socket (with
// HARNESS_HOST cleared, so the environment cannot send it elsewhere).
func HostsAttach(exe string, hosts []HostAddr) func(addr, unit string) tea.ExecCommand {
	return func(addr, unit string) tea.ExecCommand {
		flag := "--socket"
		if client.IsRemote(addr) {
			flag = "--host"
		}
		c := exec.Command(exe, flag, addr, "attach", unit)
		c.Env = append(os.Environ(), "HARNESS_HOST=")
		for _, h := range hosts {
			if h.Addr == addr {
				c.Env = append(c.Env, sshEnv(h.SSH)...)
				break
			}
		}
		c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
		return attachCommand{c}
	}
}

// sshEnv carries a host's ssh settings to a child `harness --host`: its
// key on the ssh command line, its socket on the remote one.
func sshEnv(o client.SSHOptions) []string {
	var env []string
	if o.Identity != "" {
		cmd := os.Getenv(client.SSHCommandEnv)
		if strings.TrimSpace(cmd) == "" {
			cmd = "ssh"
		}
		env = append(env, client.SSHCommandEnv+"="+cmd+" -i "+o.Identity+" -o IdentitiesOnly=yes")
	}
	if o.Socket != "" {
		bin := os.Getenv(client.RemoteBinaryEnv)
		if bin == "" {
			bin = "harness"
		}
		env = append(env, client.RemoteBinaryEnv+"="+bin+" --socket "+o.Socket)
	}
	return env
}

// attachCommand keeps the terminal ExecAttach gave it.
type attachCommand struct{ *exec.Cmd }

func (attachCommand) SetStdin(io.Reader)  {}
func (attachCommand) SetStdout(io.Writer) {}
func (attachCommand) SetStderr(io.Writer) {}

// SendLine is an Options.Send that types line and Enter into unit through
// the send op (as `harness send UNIT LINE --enter`).
func SendLine(socket string) func(ctx context.Context, unit, line string) error {
	return func(ctx context.Context, unit, line string) error {
		return client.CallOnce(ctx, socket, api.OpSend, api.SendArgs{Name: unit, Text: line, Enter: true}, nil)
	}
}

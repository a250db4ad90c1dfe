package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/tui/top"
)

func topCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Full-screen dashboard of the fleet: states, previews, logs, runs; start/stop from the keyboard",
		Long: `Full-screen dashboard of the fleet: states, previews, logs, runs; start/stop from the keyboard.

With --host given more than once, one view of several daemons: rows grouped by
host, each action sent to its row's host. A host is ssh://[user@]host[:port]
(or user@host), "local" for this machine's socket, or a socket path.

Without --host (and HARNESS_HOST), the config's [host.NAME] tables are the
other hosts, beside "local": the same machines the web page shows.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("top: find this program to run attach: %w", err)
			}
			hosts := g.topHosts()
			if len(g.hosts) == 0 && os.Getenv("HARNESS_HOST") == "" {
				if hosts, err = g.configHosts(); err != nil {
					return err
				}
			}
			if len(hosts) > 1 {
				return top.RunHosts(cmd.Context(), hosts, top.HostsAttach(exe, hosts), top.Options{})
			}
			socket := g.socketPath()
			return top.Run(cmd.Context(), socket, top.Options{Attach: top.ExecAttach(exe, socket), Send: top.SendLine(socket)})
		},
	}
	// subscribe is the socket server's own, not a control op (api.Ops);
	// the attach key runs `harness attach`.
	return callsOps(cmd, api.OpList, api.OpDescribe, api.OpMCPStatus, api.OpLogs, api.OpRuns,
		api.OpStart, api.OpStop, api.OpRestart, api.OpTrigger, api.OpReload, api.OpSend)
}

// topHosts are the hosts of `top --host a --host b`, each with the label
// its rows carry: the ssh address without its scheme, or "local" (a
// second label the same gets "#2").
func (g *globals) topHosts() []top.HostAddr {
	out := make([]top.HostAddr, 0, len(g.hosts))
	seen := map[string]int{}
	for _, h := range g.hosts {
		addr, label := h, "local"
		switch {
		case h == "local":
			addr = g.localSocket()
		case strings.HasPrefix(h, "/") || strings.HasPrefix(h, "."):
			// a socket path
		default:
			if !strings.Contains(h, "://") {
				addr = client.SSHScheme + h
			}
			label = strings.TrimPrefix(addr, client.SSHScheme)
			label = strings.ReplaceAll(label, "/", "_")
		}
		seen[label]++
		if n := seen[label]; n > 1 {
			label = fmt.Sprintf("%s#%d", label, n)
		}
		out = append(out, top.HostAddr{Label: label, Addr: addr})
	}
	return out
}

// configHosts are "local" and the config's [host.NAME] tables, by name:
// what the page shows. No config file is no other host; one that does
// not load is an error, so top and the page never disagree silently.
func (g *globals) configHosts() ([]top.HostAddr, error) {
	path := g.configPath()
	if _, err := os.Stat(path); err != nil {
		return nil, nil
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, fmt.Errorf("top: reading the [host.*] tables: %w (or name the hosts with --host)", err)
	}
	if len(cfg.Hosts) == 0 {
		return nil, nil
	}
	out := []top.HostAddr{{Label: config.LocalHost, Addr: g.localSocket()}}
	for _, name := range slices.Sorted(maps.Keys(cfg.Hosts)) {
		h := cfg.Hosts[name]
		out = append(out, top.HostAddr{Label: name, Addr: h.SSH, SSH: client.SSHOptions{Identity: h.Identity, Socket: h.Socket}})
	}
	return out, nil
}

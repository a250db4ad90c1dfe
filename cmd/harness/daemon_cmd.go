package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/daemon"
	"github.com/harness-dev/harness/internal/mcp/demoupstream"
)

func daemonCmd(g *globals) *cobra.Command {
	var logFile, cgroupMode string
	var debug bool
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Run the supervisor in the foreground",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var w io.Writer = cmd.ErrOrStderr()
			if logFile != "" {
				f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
				if err != nil {
					return fmt.Errorf("log file: %w", err)
				}
				defer f.Close()
				w = f
			}
			level := slog.LevelInfo
			if debug {
				level = slog.LevelDebug
			}
			logger := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
			daemon.TuneGC()
			return daemon.Run(cmd.Context(), daemon.Options{
				ConfigPath:    g.configPath(),
				SocketPath:    g.localSocket(),
				StateDir:      g.statePath(),
				Version:       version,
				Logger:        logger,
				HandleSignals: true,
				Cgroup:        cgroupMode,
				OwnProcess:    true,
			})
		},
	}
	cmd.Flags().StringVar(&logFile, "log-file", "", "write the daemon's log here instead of stderr")
	cmd.Flags().BoolVar(&debug, "debug", false, "log at debug level")
	cmd.Flags().StringVar(&cgroupMode, "cgroup", daemon.CgroupAuto,
		"auto: hold each run in a cgroup v2 of its own when the daemon can create one; off: never (process groups and ancestry tracking)")
	return cmd
}

// demoUpstreamCmd is the built-in demo MCP server the demo config (and
// tests and benchmarks) run as an upstream. Hidden: not for operators.
func demoUpstreamCmd() *cobra.Command {
	var name string
	var delay time.Duration
	cmd := &cobra.Command{
		Use:    "demo-upstream",
		Short:  "A tiny stdio MCP server for demos and tests",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			time.Sleep(delay) // a slow-starting upstream, for tests
			return demoupstream.Serve(context.Background(), os.Stdin, os.Stdout, name)
		},
	}
	cmd.Flags().StringVar(&name, "name", "demo", "name shown in search results")
	cmd.Flags().DurationVar(&delay, "start-delay", 0, "wait this long before answering anything")
	return cmd
}

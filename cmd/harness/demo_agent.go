package main

import (
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/demoagent"
)

// demoAgentCmd is the scripted agent `harness demo` runs in a harness.
// Hidden: not for operators.
func demoAgentCmd() *cobra.Command {
	var o demoagent.Options
	cmd := &cobra.Command{
		Use:    "demo-agent",
		Short:  "A scripted agent TUI for the demo: works, asks to edit a file, edits it",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("sessions") {
				// Where the demo adapter reads it, as agent CLIs keep
				// their sessions under their HOME.
				if home, err := os.UserHomeDir(); err == nil {
					o.Sessions = filepath.Join(home, demoagent.SessionsDir)
				}
			}
			return demoagent.Main(cmd.Context(), os.Stdin, os.Stdout, o)
		},
	}
	cmd.Flags().StringVar(&o.File, "file", "README.md", "the file it asks to edit, in its working directory")
	cmd.Flags().DurationVar(&o.Step, "step", time.Second, "how long each of its three steps of work takes")
	cmd.Flags().StringVar(&o.Sessions, "sessions", "", "the directory it keeps its session records in (default ~/"+demoagent.SessionsDir+"; \"\" keeps none)")
	return cmd
}

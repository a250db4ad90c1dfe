package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/control"
	"github.com/harness-dev/harness/internal/errcode"
)

// projectFile walks up from the working directory to the first
// harness.toml: that directory is the project root. The daemon's global
// config file is never adopted as a project.
func (g *globals) projectFile() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	global := g.configPath()
	for {
		p := filepath.Join(dir, "harness.toml")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && !sameFile(p, global) {
			return p, nil
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("looking for a project file: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errcode.Errorf(errcode.InvalidArgument, "no harness.toml in this directory or any parent (the global config does not count)")
		}
		dir = parent
	}
}

func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// qualify turns NAME into PROJECT/NAME when run inside a project that is up
// and declares NAME; anything else is left as given.
func (g *globals) qualify(cmd *cobra.Command, names []string) []string {
	path, err := g.projectFile()
	if err != nil {
		return names
	}
	var units []control.UnitInfo
	if err := g.call(cmd.Context(), "list", control.ListArgs{ProjectPath: path}, &units); err != nil {
		return names
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n
		if strings.Contains(n, "/") {
			continue
		}
		for _, u := range units {
			if u.Project != "" && u.Name == u.Project+"/"+n {
				out[i] = u.Name
			}
		}
	}
	return out
}

func upCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Register and start the project of the nearest harness.toml (re-run to reconcile)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, err := g.projectFile()
			if err != nil {
				return err
			}
			var res control.ProjectResult
			if err := g.call(cmd.Context(), "project_up", control.ProjectArgs{Path: path}, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "project %s is up (%s)\n", res.Project, res.Path)
			for _, n := range res.Started {
				fmt.Fprintf(w, "  started %s\n", n)
			}
			for _, n := range res.Removed {
				fmt.Fprintf(w, "  removed %s\n", n)
			}
			for _, n := range res.Changed {
				fmt.Fprintf(w, "  changed %s (config_changed: applies at its next restart)\n", n)
			}
			return nil
		},
	}
	addJSON(cmd, g)
	return cmd
}

func downCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "down [PROJECT]",
		Short: "Stop and forget a project's units (the current directory's, or PROJECT)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := control.ProjectArgs{}
			if len(args) == 1 {
				a.Name = args[0]
			} else {
				path, err := g.projectFile()
				if err != nil {
					return err
				}
				a.Path = path
			}
			var res control.ProjectResult
			if err := g.call(cmd.Context(), "project_down", a, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "project %s is down (%d units stopped and forgotten)\n", res.Project, len(res.Removed))
			return nil
		},
	}
	addJSON(cmd, g)
	return cmd
}

func psCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List the current project's harnesses",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, err := g.projectFile()
			if err != nil {
				return err
			}
			return listUnits(cmd, g, control.ListArgs{ProjectPath: path})
		},
	}
	addJSON(cmd, g)
	return cmd
}

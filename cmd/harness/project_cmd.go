package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
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
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && !config.SameFile(p, global) {
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

// qualify turns NAME into PROJECT/NAME when run inside a project that is up
// and declares NAME; anything else is left as given.
func (g *globals) qualify(cmd *cobra.Command, names []string) []string {
	path, err := g.projectFile()
	if err != nil {
		return names
	}
	var units []api.UnitInfo
	if err := g.call(cmd.Context(), api.OpList, api.ListArgs{ProjectPath: path}, &units); err != nil {
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

// unitName resolves the one harness name a verb takes, as qualify does:
// inside a project, its own names mean PROJECT/NAME.
func (g *globals) unitName(cmd *cobra.Command, name string) string {
	return g.qualify(cmd, []string{name})[0]
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
			var res api.ProjectResult
			if err := g.call(cmd.Context(), api.OpProjectUp, api.ProjectArgs{Path: path}, &res); err != nil {
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
	return callsOps(cmd, api.OpProjectUp)
}

func downCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "down [PROJECT]",
		Short: "Stop and forget a project's units (the current directory's, or PROJECT)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := api.ProjectArgs{}
			if len(args) == 1 {
				a.Name = args[0]
			} else {
				path, err := g.projectFile()
				if err != nil {
					return err
				}
				a.Path = path
			}
			var res api.ProjectResult
			if err := g.call(cmd.Context(), api.OpProjectDown, a, &res); err != nil {
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
	return callsOps(cmd, api.OpProjectDown)
}

func psCmd(g *globals) *cobra.Command {
	return unitsVerb(g, "ps", "List the current project's harnesses", func(*cobra.Command) (api.ListArgs, error) {
		path, err := g.projectFile()
		if err != nil {
			return api.ListArgs{}, err
		}
		return api.ListArgs{ProjectPath: path}, nil
	})
}

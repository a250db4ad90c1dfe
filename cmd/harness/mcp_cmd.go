package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/control"
)

func mcpCmd(g *globals) *cobra.Command {
	var allowControl bool
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Stdio MCP server for an agent: a pipe to a session served by the daemon",
		Long: `harness mcp is what an agent launches as its MCP server. It pipes stdio to an
MCP session the daemon serves over the control socket. Inside a harness it
presents HARNESS_MCP_TOKEN, so the session acts with that harness's mcp_allow.
Without a token it is read-only unless --allow-control is given.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return bridge(cmd, g.socketPath(), os.Getenv("HARNESS_MCP_TOKEN"), allowControl)
		},
	}
	cmd.Flags().BoolVar(&allowControl, "allow-control", false, "unattributed sessions may also start, stop, restart and trigger")
	cmd.AddCommand(mcpStatusCmd(g), mcpConfigCmd(g))
	return cmd
}

// bridge copies bytes both ways between stdio and the daemon's MCP stream.
// It ends when the daemon closes the stream, or when stdin ends and the
// daemon has answered what it was sent.
func bridge(cmd *cobra.Command, socket, token string, allowControl bool) error {
	conn, err := client.DialMCP(cmd.Context(), socket, token, allowControl)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	defer conn.Close()
	fromDaemon := make(chan error, 1)
	go func() {
		_, err := io.Copy(cmd.OutOrStdout(), conn)
		fromDaemon <- err
	}()
	go func() {
		_, err := io.Copy(conn, cmd.InOrStdin())
		if err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "harness mcp: stdin:", err)
		}
		// Half-close so the daemon sees EOF but can still flush answers.
		if uc, ok := conn.(*net.UnixConn); ok {
			uc.CloseWrite()
		} else {
			conn.Close()
		}
	}()
	if err := <-fromDaemon; err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("mcp: connection to daemon: %w", err)
	}
	return nil
}

func mcpStatusCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show upstream MCP servers: state, pid, tools, restarts, last error",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res []control.UpstreamStatus
			if err := g.call(cmd.Context(), "mcp_status", struct{}{}, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			var rows [][]string
			for _, u := range res {
				key := u.Key
				if u.Project != "" {
					key = u.Project + "/" + u.Key
				}
				rows = append(rows, []string{key, u.State, pidStr(u.PID), fmt.Sprint(u.Tools), fmt.Sprint(u.Restarts), orDash(u.LastError)})
			}
			table(cmd.OutOrStdout(), "KEY\tSTATE\tPID\tTOOLS\tRESTARTS\tLAST ERROR", rows)
			return nil
		},
	}
	addJSON(cmd, g)
	return cmd
}

// mcpConfigCmd prints the snippet that wires `harness mcp` into a client,
// in that client's own config format.
func mcpConfigCmd(g *globals) *cobra.Command {
	var clientName string
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the snippet that adds harness to an MCP client's config",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				exe = "harness"
			} else if abs, err := filepath.Abs(exe); err == nil {
				exe = abs
			}
			s, err := mcpSnippet(clientName, exe)
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), s)
			return nil
		},
	}
	cmd.Flags().StringVar(&clientName, "client", "claude-code", "claude-code, codex or cursor")
	return cmd
}

// mcpSnippet renders the stdio server entry for one client.
func mcpSnippet(clientName, exe string) (string, error) {
	jsonEntry := func() string {
		b, _ := json.MarshalIndent(map[string]any{
			"mcpServers": map[string]any{
				"harness": map[string]any{"command": exe, "args": []string{"mcp"}},
			},
		}, "", "  ")
		return string(b) + "\n"
	}
	switch clientName {
	case "claude-code":
		return "# project scope: save as .mcp.json in the repository root\n# (or run: claude mcp add harness -- " + exe + " mcp)\n" + jsonEntry(), nil
	case "cursor":
		return "# save as ~/.cursor/mcp.json (global) or .cursor/mcp.json (project)\n" + jsonEntry(), nil
	case "codex":
		return fmt.Sprintf("# add to ~/.codex/config.toml\n[mcp_servers.harness]\ncommand = %q\nargs = [\"mcp\"]\n", exe), nil
	default:
		return "", fmt.Errorf("mcp config: unknown client %q (want %s)", clientName, strings.Join([]string{"claude-code", "codex", "cursor"}, ", "))
	}
}

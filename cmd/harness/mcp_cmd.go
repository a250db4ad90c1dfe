package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/dashtoken"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/mcp/httpmcp"
)

func mcpCmd(g *globals) *cobra.Command {
	var allowControl bool
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Stdio MCP server for an agent: a session served by the daemon",
		Long: `harness mcp is what an agent launches as its MCP server: an MCP session the
daemon serves. Inside a harness it presents HARNESS_MCP_TOKEN, so the session
acts with that harness's mcp_allow. Without a token it is read-only unless
--allow-control is given.

After the handshake it hands its stdin and stdout to the daemon, which serves
the session on them directly, and waits for the session to end; when they are
not pipes or sockets (a terminal), or the daemon is older, it copies bytes
between stdio and the socket instead. HARNESS_MCP_HANDOFF=0 always copies.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveMCP(cmd, g.socketPath(), client.MCPOptions{
				Token:        os.Getenv("HARNESS_MCP_TOKEN"),
				AllowControl: allowControl,
				Handoff:      client.HandoffEnabled(os.Getenv(client.HandoffEnv)),
			})
		},
	}
	cmd.Flags().BoolVar(&allowControl, "allow-control", false, "unattributed sessions may also start, stop, restart and trigger")
	cmd.AddCommand(mcpStatusCmd(g), mcpConfigCmd(g), mcpTokenCmd(g), mcpLoginCmd(g), mcpLogoutCmd(g), mcpPinsCmd(g), mcpApproveCmd(g))
	return cmd
}

// serveMCP runs stdio's MCP session until it ends or the agent signals
// `harness mcp` to stop.
func serveMCP(cmd *cobra.Command, socket string, opt client.MCPOptions) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	if err := client.ServeMCP(ctx, socket, opt, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()); err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

func mcpStatusCmd(g *globals) *cobra.Command {
	return listVerb(g, listing[api.UpstreamStatus]{
		use: "status", short: "Show upstream MCP servers: state, pid or url, tools, restarts, calls, next attempt, last error", op: api.OpMCPStatus,
		header: "KEY\tSTATE\tPID\tTOOLS\tRESTARTS\tCALLS\tERRORS\tP50\tP99\tNEXT ATTEMPT\tURL\tLAST ERROR",
		row: func(u api.UpstreamStatus) []string {
			key := u.Key
			if u.Project != "" {
				key = u.Project + "/" + u.Key
			}
			return append([]string{key, u.State, pidStr(u.PID), fmt.Sprint(u.Tools), fmt.Sprint(u.Restarts)},
				append(callColumns(u.Calls.CallStats), when(u.NextRetry), orDash(u.URL), orDash(u.LastError))...)
		},
	}, nil)
}

// mcpConfigCmd prints the snippet that wires `harness mcp` into a client,
// in that client's own config format.
func mcpConfigCmd(g *globals) *cobra.Command {
	var clientName string
	var overHTTP bool
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
			var s string
			if overHTTP {
				var info api.DaemonInfo
				if err := g.call(cmd.Context(), api.OpDaemonInfo, struct{}{}, &info); err != nil {
					return err
				}
				if info.MCPURL == "" {
					return errcode.Errorf(errcode.InvalidArgument, "the daemon serves no HTTP endpoint: set [daemon] mcp_http")
				}
				s, err = mcpHTTPSnippet(clientName, info.MCPURL)
			} else {
				s, err = mcpSnippet(clientName, exe, snippetSocket(g))
			}
			if err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), map[string]string{"client": clientName, "snippet": s})
			}
			fmt.Fprint(cmd.OutOrStdout(), s)
			return nil
		},
	}
	addJSON(cmd, g)
	cmd.Flags().StringVar(&clientName, "client", "claude-code", "claude-code, codex or cursor")
	cmd.Flags().BoolVar(&overHTTP, "http", false, "use the daemon's Streamable HTTP endpoint ([daemon] mcp_http)")
	return cmd
}

// tokenEnv is where HTTP snippets read the bearer token from: a harness
// has it set per run; an operator exports HARNESS_MCP_TOKEN=$(harness mcp token).
const tokenEnv = "HARNESS_MCP_TOKEN"

// mcpHTTPSnippet renders an HTTP server entry whose Authorization header
// comes from the environment, never the literal token.
func mcpHTTPSnippet(clientName, url string) (string, error) {
	jsonEntry := func(entry map[string]any) string {
		b, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{"harness": entry}}, "", "  ")
		return string(b) + "\n"
	}
	switch clientName {
	case "claude-code":
		return "# .mcp.json; Claude Code expands ${VAR} from the environment\n" +
			jsonEntry(map[string]any{"type": "http", "url": url, "headers": map[string]string{"Authorization": "Bearer ${" + tokenEnv + "}"}}), nil
	case "cursor":
		return "# ~/.cursor/mcp.json; Cursor expands ${env:VAR}\n" +
			jsonEntry(map[string]any{"url": url, "headers": map[string]string{"Authorization": "Bearer ${env:" + tokenEnv + "}"}}), nil
	case "codex":
		return fmt.Sprintf("# add to ~/.codex/config.toml\n[mcp_servers.harness]\nurl = %q\nbearer_token_env_var = %q\n", url, tokenEnv), nil
	default:
		return "", errcode.Errorf(errcode.InvalidArgument, "mcp config: unknown client %q (want claude-code, codex or cursor)", clientName)
	}
}

// mcpTokenCmd prints the operator token of the HTTP endpoint, the one the
// daemon answering on the socket made; with --dashboard it mints a web
// dashboard token with a grant of its own (docs/design/web.md), and --revoke or
// --list manage those.
func mcpTokenCmd(g *globals) *cobra.Command {
	var dashboard, list bool
	var grant []string
	var revoke string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Print the operator token for the MCP HTTP endpoint, or mint a dashboard token",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case revoke != "":
				n, err := dashtoken.Revoke(g.statePath(), revoke)
				if err != nil {
					return err
				}
				if g.json {
					return emit(cmd.OutOrStdout(), map[string]int{"revoked": n})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked %d dashboard token(s)\n", n)
				return nil
			case list:
				ts, err := dashtoken.List(g.statePath())
				if err != nil {
					return err
				}
				if g.json {
					return emit(cmd.OutOrStdout(), ts)
				}
				for _, t := range ts {
					fmt.Fprintf(cmd.OutOrStdout(), "%s  %-24s  %s\n", t.ID, strings.Join(t.Grant, ","), t.Created.Format(time.RFC3339))
				}
				return nil
			case dashboard:
				tok, t, err := dashtoken.Mint(g.statePath(), splitClasses(grant), time.Now())
				if err != nil {
					return err
				}
				if g.json {
					return emit(cmd.OutOrStdout(), map[string]any{"token": tok, "id": t.ID, "grant": t.Grant})
				}
				fmt.Fprintln(cmd.OutOrStdout(), tok)
				fmt.Fprintf(cmd.ErrOrStderr(), "dashboard token %s (grant %s); revoke with: harness mcp token --revoke %s\n", t.ID, strings.Join(t.Grant, ","), t.ID)
				return nil
			case len(grant) > 0:
				return errcode.Errorf(errcode.InvalidArgument, "mcp token: --grant goes with --dashboard")
			}
			tok, err := operatorToken(cmd.Context(), g)
			if err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), map[string]string{"token": tok})
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok)
			return nil
		},
	}
	cmd.Flags().BoolVar(&dashboard, "dashboard", false, "mint a token for the web dashboard (shown once; the state dir keeps only its hash)")
	cmd.Flags().StringSliceVar(&grant, "grant", nil, "the dashboard token's grant: read, write, input (default read)")
	cmd.Flags().StringVar(&revoke, "revoke", "", "revoke the dashboard token with this id (or all)")
	cmd.Flags().BoolVar(&list, "list", false, "list the dashboard tokens (ids and grants, never the tokens)")
	addJSON(cmd, g)
	return cmd
}

// splitClasses accepts "read,write" as well as repeated --grant flags.
func splitClasses(in []string) []string {
	var out []string
	for _, s := range in {
		for _, c := range strings.Split(s, ",") {
			if c = strings.TrimSpace(c); c != "" {
				out = append(out, c)
			}
		}
	}
	return out
}

// mcpSnippet renders the stdio server entry for one client; a socket other
// than the default ("" for the default) goes in as HARNESS_SOCKET.
func mcpSnippet(clientName, exe, socket string) (string, error) {
	entry := map[string]any{"command": exe, "args": []string{"mcp"}}
	addFlag, codexEnv := "", ""
	if socket != "" {
		entry["env"] = map[string]string{"HARNESS_SOCKET": socket}
		addFlag = " -e HARNESS_SOCKET=" + shellQuote(socket)
		codexEnv = fmt.Sprintf("env = { HARNESS_SOCKET = %q }\n", socket)
	}
	jsonEntry := func() string {
		b, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{"harness": entry}}, "", "  ")
		return string(b) + "\n"
	}
	switch clientName {
	case "claude-code":
		return "# project scope: save as .mcp.json in the repository root\n# (or run: claude mcp add harness" + addFlag + " -- " + shellQuote(exe) + " mcp)\n" + jsonEntry(), nil
	case "cursor":
		return "# save as ~/.cursor/mcp.json (global) or .cursor/mcp.json (project)\n" + jsonEntry(), nil
	case "codex":
		return fmt.Sprintf("# add to ~/.codex/config.toml\n[mcp_servers.harness]\ncommand = %q\nargs = [\"mcp\"]\n%s", exe, codexEnv), nil
	default:
		return "", errcode.Errorf(errcode.InvalidArgument, "mcp config: unknown client %q (want claude-code, codex or cursor)", clientName)
	}
}

// operatorToken is the operator token of the daemon that answers on the
// socket: read from the state dir the daemon reports, never from (or
// created in) this CLI's own, which may be another (a daemon started with
// --state-dir elsewhere would refuse that token with a 401).
func operatorToken(ctx context.Context, g *globals) (string, error) {
	if strings.HasPrefix(g.socketPath(), client.SSHScheme) {
		return "", errcode.Errorf(errcode.InvalidArgument, "mcp token: the operator token never leaves the daemon's machine: run harness mcp token there")
	}
	var info api.DaemonInfo
	if err := g.call(ctx, api.OpDaemonInfo, api.NoArgs{}, &info); err != nil {
		return "", fmt.Errorf("mcp token: the token is the daemon's, ask it once it runs: %w", err)
	}
	if info.MCPURL == "" {
		return "", errcode.Errorf(errcode.InvalidArgument, "mcp token: the daemon (pid %d) serves no MCP HTTP endpoint, so it has no operator token: set mcp_http in [daemon]", info.PID)
	}
	tok, err := httpmcp.ReadOperatorToken(info.Paths.StateDir)
	if err != nil {
		return "", fmt.Errorf("mcp token: the daemon's state dir %s: %w", info.Paths.StateDir, err)
	}
	return tok, nil
}

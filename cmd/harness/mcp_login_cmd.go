package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
)

// mcpLoginCmd signs an upstream with auth = "oauth" in (docs/design/mcp.md): the
// daemon asks the server how, registers a client if need be and listens on
// a loopback port; this prints the URL to open and waits until the
// browser has come back and the tokens are stored.
func mcpLoginCmd(g *globals) *cobra.Command {
	var noWait bool
	cmd := &cobra.Command{
		Use:   "login KEY",
		Short: "Sign in to an upstream with auth = \"oauth\": print the URL to open, wait for the browser to come back",
		Long: `harness mcp login KEY signs the daemon in to the remote upstream KEY (or
PROJECT/KEY) with OAuth: it prints the authorization URL to open in a
browser; after you approve, the browser is sent back to a loopback port of
the daemon, which stores the tokens (0600, in the state dir) and reconnects
the upstream. The daemon refreshes them from then on; when the server
refuses the refresh, mcp status shows needs_login and you sign in again.

With --json it prints one JSON object when the URL is known and one when
the sign-in is over.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var r api.MCPLoginResult
			if err := g.call(cmd.Context(), api.OpMCPLogin, api.MCPLoginArgs{Key: args[0]}, &r); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.json {
				if err := emit(out, r); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "Open this URL in a browser to sign in to %s (it comes back to %s):\n", r.Key, r.Redirect)
				fmt.Fprintln(out, r.URL)
			}
			if noWait {
				return nil
			}
			if err := g.call(cmd.Context(), api.OpMCPLogin, api.MCPLoginArgs{Key: args[0], Wait: true}, &r); err != nil {
				return err
			}
			if g.json {
				return emit(out, r)
			}
			fmt.Fprintf(out, "signed in to %s\n", r.Key)
			return nil
		},
	}
	addJSON(cmd, g)
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "print the URL and return; the daemon still takes the redirect")
	return callsOps(cmd, api.OpMCPLogin)
}

// mcpLogoutCmd deletes an upstream's tokens; it then needs a login.
func mcpLogoutCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "logout KEY",
		Short: "Forget an upstream's OAuth tokens; it shows needs_login until the next login",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var r api.MCPLoginResult
			if err := g.call(cmd.Context(), api.OpMCPLogout, api.MCPLogoutArgs{Key: args[0]}, &r); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), r)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "signed out of %s\n", r.Key)
			return nil
		},
	}
	addJSON(cmd, g)
	return callsOps(cmd, api.OpMCPLogout)
}

package main

import (
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/bridge"
	"github.com/harness-dev/harness/internal/errcode"
)

// bridgeCmd is the remote end of --host (docs/design/remote.md): the forced command
// of an SSH key, joining its stdio to this machine's daemon under a grant.
func bridgeCmd(g *globals) *cobra.Command {
	var grant, key string
	cmd := &cobra.Command{
		Use:   "bridge",
		Short: "Serve this machine's daemon on stdio for `harness --host ssh://…`, within a grant (an SSH forced command)",
		Long: `harness bridge joins its stdin and stdout to the local control socket, for a
client elsewhere that runs "harness --host ssh://this-machine VERB". Every
operation it forwards is checked against --grant: read (list, describe, logs,
screen, calls, a read-only attach, ...), write (start, stop, restart, trigger,
reload, ...), input (send, answer, a read-write attach). A refused operation
is answered not_permitted naming the class it needs and never reaches the
daemon. An MCP session through the bridge gets the grant as its own.

Meant as the forced command of a key in ~/.ssh/authorized_keys:

  command="harness bridge --grant read,input --key teammate",no-pty,no-port-forwarding ssh-ed25519 AAAA... teammate`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			gr, err := api.ParseGrant(splitList(grant))
			if err != nil {
				return errcode.Errorf(errcode.InvalidArgument, "--grant: %v", err)
			}
			if gr.Empty() {
				return errcode.Errorf(errcode.InvalidArgument, "--grant: grant at least one class (read, write, input)")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
			defer stop()
			return bridge.Serve(ctx, g.localSocket(), gr, sshActor(key), cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "names this key in the audit log (ssh:KEY); default: the client's address")
	cmd.Flags().StringVar(&grant, "grant", "read", "classes this key may use, comma separated: read, write, input (or NAMESPACE:CLASS for an MCP session's upstreams)")
	return cmd
}

// sshActor is the audit log's actor of this key: ssh:KEY, else the
// client's address as sshd says it.
func sshActor(key string) string {
	if key == "" {
		key, _, _ = strings.Cut(os.Getenv("SSH_CLIENT"), " ")
	}
	if key == "" {
		key = "unknown"
	}
	return "ssh:" + key
}

// splitList splits a comma separated flag value, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

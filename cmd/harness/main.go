// Command harness supervises long-running agent CLIs and serves them MCP.
// `harness daemon` is the supervisor; every other verb is a thin client of
// its control socket (docs/design/wire.md).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/protocol"
	"github.com/harness-dev/harness/internal/sandbox"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// globals are the flags every verb shares.
type globals struct {
	socket   string
	config   string
	stateDir string
	host     string
	hosts    []string // every --host given (top shows several)
	json     bool
}

// hostFlag is --host: the last one given is the daemon of every verb;
// `top` takes them all (several hosts in one view).
type hostFlag struct{ g *globals }

func (h hostFlag) String() string { return h.g.host }
func (h hostFlag) Type() string   { return "string" }
func (h hostFlag) Set(v string) error {
	h.g.host = v
	h.g.hosts = append(h.g.hosts, v)
	return nil
}

// exitError carries a specific exit status (trigger --wait follows the
// job's) without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	if len(os.Args) > 1 && os.Args[1] == sandbox.Subcommand {
		// The shim of a sandboxed spawn: nothing else of the CLI runs
		// before it execs the program (docs/design/sandbox.md).
		os.Exit(sandbox.Exec(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	g := &globals{}
	root := newRoot(g, stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	// A usage error can stop parsing before --json is read.
	if !g.json && slices.Contains(args, "--json") {
		g.json = true
	}
	if g.json {
		b, _ := json.Marshal(map[string]errcode.Body{"error": errcode.BodyOf(err)})
		fmt.Fprintln(stdout, string(b))
	} else {
		// The message, then the code when it carries one.
		if code := errcode.Of(err); code != errcode.Internal {
			fmt.Fprintf(stderr, "harness: %s (%s)\n", errcode.Message(err), code)
		} else {
			fmt.Fprintln(stderr, "harness:", errcode.Message(err))
		}
	}
	return 1
}

func newRoot(g *globals, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "harness",
		Short:         "Supervise agent CLIs in PTYs and give them MCP access to their fleet",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return errcode.Errorf(errcode.InvalidArgument, "%v", err)
	})
	pf := root.PersistentFlags()
	pf.StringVar(&g.socket, "socket", "", "control socket (default $HARNESS_SOCKET, else $XDG_RUNTIME_DIR/harness/harness.sock)")
	pf.StringVar(&g.config, "config", "", "config file (default $HARNESS_CONFIG, else $XDG_CONFIG_HOME/harness/harness.toml)")
	pf.Var(hostFlag{g}, "host", "the daemon of another machine, through ssh: ssh://[user@]host[:port] (default $HARNESS_HOST); top takes several")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if len(g.hosts) > 1 && cmd.Name() != "top" {
			return errcode.Errorf(errcode.InvalidArgument, "--host is given %d times; only top shows several hosts", len(g.hosts))
		}
		return nil
	}
	pf.StringVar(&g.stateDir, "state-dir", "", "state directory (default $HARNESS_STATE_DIR, else $XDG_STATE_HOME/harness)")
	root.AddCommand(
		daemonCmd(g),
		demoCmd(g),
		listCmd(g),
		describeCmd(g),
		logsCmd(g),
		actionCmd(g, "start", "Start harnesses (idempotent)"),
		actionCmd(g, "stop", "Stop harnesses (idempotent)"),
		actionCmd(g, "restart", "Restart harnesses; clears a failed state"),
		runsCmd(g),
		jobsCmd(g),
		triggersCmd(g),
		triggerCmd(g),
		trajectoriesCmd(g), trajectoryCmd(g),
		profilesCmd(g),
		useProfileCmd(g),
		reloadCmd(g),
		daemonInfoCmd(g),
		shutdownCmd(g),
		mcpCmd(g),
		hookCmd(g),
		turnsCmd(g),
		callsCmd(g),
		upCmd(g),
		downCmd(g),
		psCmd(g),
		topCmd(g),
		sendCmd(g), attachCmd(g),
		notifyCmd(g),
		demoUpstreamCmd(), demoAgentCmd(),
		bridgeCmd(g),
		serviceCmd(g),
	)
	root.AddCommand(screenCmd(g), waitCmd(g))          // terminals (docs/design/terminals.md)
	root.AddCommand(worktreeCmd(g))                    // workspaces (docs/design/resources.md)
	root.AddCommand(landCmd(g))                        // landing a worktree's branch (docs/worktrees.md)
	root.AddCommand(diffCmd(g), reviewCmd(g))          // review (docs/design/resources.md)
	root.AddCommand(answerCmd(g))                      // agents (docs/design/agents.md)
	root.AddCommand(delegateCmd(g))                    // agents (docs/design/agents.md)
	root.AddCommand(runCmd(g))                         // scratch harnesses (docs/design/agents.md)
	root.AddCommand(newCmd(g), rmCmd(g), agentsCmd(g)) // harness.d (docs/agents.md)
	root.AddCommand(auditCmd(g))                       // the audit log (docs/operations.md)
	root.AddCommand(pairCmd(g), devicesCmd(g))         // the listener for people (docs/design/web.md)
	usageErrorsAreInvalidArguments(root)
	return root
}

// usageErrorsAreInvalidArguments wraps every command's argument check so a
// wrong number of arguments carries the invalid_argument code in --json
// output, like a bad flag does.
func usageErrorsAreInvalidArguments(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return errcode.Errorf(errcode.InvalidArgument, "%v", err)
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		usageErrorsAreInvalidArguments(sub)
	}
}

// socketPath is where the daemon a verb talks to is: another machine's
// through ssh (--host, $HARNESS_HOST; internal/client dials ssh:// itself),
// else the local control socket.
func (g *globals) socketPath() string {
	host := g.host
	if host == "" {
		host = os.Getenv("HARNESS_HOST")
	}
	if host == "" || host == "local" { // "local": this machine's, as top --host local
		return g.localSocket()
	}
	if !strings.Contains(host, "://") {
		host = client.SSHScheme + host // user@box is ssh://user@box
	}
	return host
}

// localSocket resolves this machine's control socket: flag, environment,
// default. The daemon serves it and the bridge joins it, whatever --host
// says.
func (g *globals) localSocket() string {
	if g.socket != "" {
		return g.socket
	}
	if s := os.Getenv("HARNESS_SOCKET"); s != "" {
		return s
	}
	s, _, _ := protocol.DefaultPaths()
	return s
}

func (g *globals) configPath() string {
	if g.config != "" {
		return g.config
	}
	if s := os.Getenv("HARNESS_CONFIG"); s != "" {
		return s
	}
	_, _, c := protocol.DefaultPaths()
	return c
}

func (g *globals) statePath() string {
	if g.stateDir != "" {
		return g.stateDir
	}
	if s := os.Getenv("HARNESS_STATE_DIR"); s != "" {
		return s
	}
	_, s, _ := protocol.DefaultPaths()
	return s
}

// call runs one control operation against the daemon, on a connection
// of its own (one round trip: the request rides with the hello).
func (g *globals) call(ctx context.Context, op string, args any, result any) error {
	return client.CallOnce(ctx, g.socketPath(), op, args, result)
}

// emit prints v as indented JSON.
func emit(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// emitRaw prints JSON that is already encoded (compact, as json.Marshal
// writes it) exactly as emit prints the value it encodes.
func emitRaw(w io.Writer, raw json.RawMessage) error {
	var b bytes.Buffer
	b.Grow(2*len(raw) + 1)
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

func addJSON(cmd *cobra.Command, g *globals) {
	cmd.Flags().BoolVar(&g.json, "json", false, "print JSON")
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The upstreams part 1 calls, both: the demo upstream's
// echo (a typed input, read-only annotations), and a go-sdk server of the
// bench's own whose echo has a typed input schema and no annotations, as
// many real servers' tools have (the daemon classes it write).

// callUpstream is one kind of upstream part 1 can measure.
type callUpstream struct {
	kind  string
	about string
	// cmd is the upstream's command line, named name (bin: the harness
	// binary under test).
	cmd func(bin, name string) (string, []string, error)
}

var callUpstreams = []callUpstream{
	{"demo", "`harness demo-upstream`'s echo (typed input, read-only annotations)", func(bin, name string) (string, []string, error) {
		return bin, []string{"demo-upstream", "--name", name}, nil
	}},
	{"typed", "the bench's own go-sdk server: echo with a typed input schema and no annotations", func(_, name string) (string, []string, error) {
		exe, err := os.Executable()
		return exe, []string{"-serve-typed-upstream", name}, err
	}},
}

// upstreamOf is the callUpstream of kind.
func upstreamOf(kind string) (callUpstream, error) {
	for _, u := range callUpstreams {
		if u.kind == kind {
			return u, nil
		}
	}
	var kinds []string
	for _, u := range callUpstreams {
		kinds = append(kinds, u.kind)
	}
	return callUpstream{}, fmt.Errorf("no upstream %q (want one of %s)", kind, strings.Join(kinds, ", "))
}

// tomlCommand is cmd and args as the daemon's [mcp.KEY] table wants them.
func tomlCommand(cmd string, args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf("cmd = %q\nargs = [%s]\n", cmd, strings.Join(quoted, ", "))
}

// typedIn is the typed echo's input: its schema is derived from it.
type typedIn struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

// serveTypedUpstream is the -serve-typed-upstream mode: NAME. It serves
// the typed echo on stdio until stdin ends.
func serveTypedUpstream(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: -serve-typed-upstream NAME")
	}
	s := mcp.NewServer(&mcp.Implementation{Name: args[0], Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Return text unchanged."},
		func(_ context.Context, _ *mcp.CallToolRequest, in typedIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	return s.Run(context.Background(), &mcp.StdioTransport{})
}

// directSession is path (a): a client of its own upstream process.
func directSession(ctx context.Context, up callUpstream, bin, name string) (*mcp.ClientSession, error) {
	cmd, args, err := up.cmd(bin, name)
	if err != nil {
		return nil, err
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "bench-direct", Version: "1"}, nil)
	return cl.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(cmd, args...)}, nil)
}

package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/daemon"
)

//go:embed demo.toml
var demoConfig string

const demoPrompt = `---
description: Review the current diff for a topic
arguments:
  - name: topic
    description: what to focus on
    required: true
---
Review the working tree's diff with attention to {{topic}}. Report findings as a list.
`

func demoCmd(g *globals) *cobra.Command {
	var exitAfter time.Duration
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a throw-away daemon on an embedded demo fleet; Ctrl-C cleans up",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd, exitAfter)
		},
	}
	cmd.Flags().DurationVar(&exitAfter, "exit-after", 0, "end the demo by itself after this long (for scripted runs)")
	return cmd
}

func runDemo(cmd *cobra.Command, exitAfter time.Duration) error {
	out := cmd.OutOrStdout()
	dir, err := os.MkdirTemp("", "harness-demo-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer os.RemoveAll(dir)
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: locate own binary: %w", err)
	}
	promptDir := filepath.Join(dir, "prompts")
	if err := os.MkdirAll(promptDir, 0o700); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := os.WriteFile(filepath.Join(promptDir, "review.md"), []byte(demoPrompt), 0o600); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	cfgText := strings.NewReplacer("{{EXE}}", exe, "{{PROMPTS}}", promptDir).Replace(demoConfig)
	cfgPath := filepath.Join(dir, "harness.toml")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o600); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	socket := filepath.Join(dir, "harness.sock")
	stateDir := filepath.Join(dir, "state")
	logPath := filepath.Join(dir, "daemon.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer logFile.Close()

	// SIGHUP too: a demo whose terminal closed left its dir behind.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if exitAfter > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, exitAfter)
		defer cancel()
	}
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, daemon.Options{
			ConfigPath: cfgPath, SocketPath: socket, StateDir: stateDir, Version: version,
			Logger: slog.New(slog.NewTextHandler(logFile, nil)),
			Ready:  func(api.Paths) { close(ready) },
		})
	}()
	select {
	case <-ready:
	case err := <-done:
		return fmt.Errorf("demo: daemon: %w", err)
	}

	fmt.Fprintf(out, "harness demo: a daemon is running on a throw-away fleet in %s\n\n", dir)
	if err := demoMCP(ctx, out, socket); err != nil {
		fmt.Fprintf(out, "(MCP tour failed: %v)\n", err)
	}
	me := selfCommand(exe)
	fmt.Fprintf(out, `
Try, in another terminal:
  export HARNESS_SOCKET=%s
  %[2]s list                      # ticker runs, crashy restarts, degrades, then fails
  %[2]s logs ticker --follow      # activity entries; add --raw for terminal bytes
  %[2]s screen ticker             # what its terminal shows now
  %[2]s top                       # the dashboard (q quits)
  %[2]s runs crashy               # every spawn with its exit code
  %[2]s trigger nightly --wait    # run the job now and follow it
  %[2]s jobs; %[2]s triggers
  %[2]s mcp status                # the shared demo upstream
  %[2]s mcp --allow-control       # a stdio MCP session (type JSON-RPC, or point a client at it)
  edit %s                         # saved changes reload automatically

The daemon's log: %s
Ctrl-C stops every process the demo started and removes %s.
`, shellQuote(socket), me, cfgPath, logPath, dir)
	err = <-done
	fmt.Fprintln(out, "harness demo: stopped; nothing left running")
	return err
}

// demoMCP shows what an agent sees: the tools of an unattributed session
// and one call.
func demoMCP(ctx context.Context, out io.Writer, socket string) error {
	conn, err := client.DialMCP(ctx, socket, "", false)
	if err != nil {
		return err
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "harness-demo", Version: version}, nil)
	sess, err := cl.Connect(ctx, &mcp.IOTransport{Reader: conn, Writer: conn}, nil)
	if err != nil {
		conn.Close()
		return err
	}
	defer sess.Close()
	// The upstream may still be starting: its tools appear once it answers.
	deadline := time.Now().Add(5 * time.Second)
	var tools *mcp.ListToolsResult
	for {
		tools, err = sess.ListTools(ctx, &mcp.ListToolsParams{})
		if err != nil {
			return err
		}
		if hasPrefix(tools.Tools, "demo__") || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	fmt.Fprintln(out, "An MCP session (read-only, unattributed) lists these tools:")
	for _, t := range tools.Tools {
		fmt.Fprintf(out, "  %-22s %s\n", t.Name, firstLine(t.Description))
	}
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "demo__echo", Arguments: map[string]any{"text": "hello through the broker"}})
	if err == nil && len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			fmt.Fprintf(out, "\ntools/call demo__echo -> %s\n", tc.Text)
		}
	}
	res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: "harness_stop", Arguments: map[string]any{"name": "ticker"}})
	if err == nil && res.IsError {
		var body map[string]any
		if tc, ok := res.Content[0].(*mcp.TextContent); ok && json.Unmarshal([]byte(tc.Text), &body) == nil {
			fmt.Fprintf(out, "tools/call harness_stop -> refused: %v\n", body["code"])
		}
	}
	return nil
}

func hasPrefix(ts []*mcp.Tool, p string) bool {
	for _, t := range ts {
		if strings.HasPrefix(t.Name, p) {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/daemon"
	"github.com/harness-dev/harness/internal/dashtoken"
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
	var exitAfter, answerAfter time.Duration
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a throw-away daemon with a scripted agent that asks before it edits; Ctrl-C cleans up",
		Long: "Starts a daemon in a temp dir with the built-in demo agent (no model, no network) working in a git\n" +
			"worktree of a demo repository, and prints as it happens: the dashboard's URL and a sign-in token, a\n" +
			"pairing URL and its QR code, the agent waiting for permission and the ways to answer it (the CLI, its\n" +
			"page, its notification's action links), then the diff it made and `harness land`. With no terminal on\n" +
			"stdin the demo answers Yes itself through the Yes link and lands the change, as a person would.\n" +
			"Ctrl-C stops everything and removes the temp dir.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("answer-after") && term.IsTerminal(os.Stdin.Fd()) {
				answerAfter = 0 // a person is there to answer
			}
			return runDemo(cmd, exitAfter, answerAfter)
		},
	}
	cmd.Flags().DurationVar(&exitAfter, "exit-after", 0, "end the demo by itself after this long (for scripted runs)")
	cmd.Flags().DurationVar(&answerAfter, "answer-after", 3*time.Second,
		"answer the agent's prompt Yes after this long (default: only when stdin is not a terminal; 0 never)")
	return cmd
}

// demoAgent is the demo harness's name, and demoTask the prompt harness
// types into it once it is ready.
const (
	demoAgent = "demo"
	demoTask  = "Add a line to README.md saying who wrote it"
)

func runDemo(cmd *cobra.Command, exitAfter, answerAfter time.Duration) error {
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
	// SIGHUP too: a demo whose terminal closed left its dir behind.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if exitAfter > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, exitAfter)
		defer cancel()
	}
	promptDir := filepath.Join(dir, "prompts")
	if err := os.MkdirAll(promptDir, 0o700); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := os.WriteFile(filepath.Join(promptDir, "review.md"), []byte(demoPrompt), 0o600); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	repo := filepath.Join(dir, "repo")
	workspace := "worktree = { repo = " + tomlString(repo) + " }"
	gitErr := demoRepo(ctx, repo)
	if gitErr != nil {
		workspace = "workdir = " + tomlString(repo)
		fmt.Fprintf(out, "harness demo: no git repository (%v): the agent works in a plain directory, with no worktree or diff\n", gitErr)
	}
	notifyFile := filepath.Join(dir, "notification.json")
	// The agent's HOME, where it keeps its session records: the demo's
	// own, removed with the rest.
	agentHome := filepath.Join(dir, "home")
	if err := os.MkdirAll(agentHome, 0o700); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	cfgText := strings.NewReplacer("{{EXE}}", tomlEscape(exe), "{{PROMPTS}}", tomlEscape(promptDir), "{{WORKSPACE}}", workspace,
		"{{TASK}}", tomlEscape(demoTask), "{{NOTIFY}}", tomlEscape(notifyFile), "{{HOME}}", tomlEscape(agentHome)).Replace(demoConfig)
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

	d := &demo{out: out, exe: exe, me: selfCommand(exe), socket: socket, stateDir: stateDir, repo: repo, git: gitErr == nil, notifyFile: notifyFile}
	if err := d.story(ctx, answerAfter); err != nil && ctx.Err() == nil {
		fmt.Fprintf(out, "(the demo's story stopped: %v; the daemon's log is %s)\n", err, logPath)
	}
	if ctx.Err() == nil {
		fmt.Fprintln(out)
		if err := demoMCP(ctx, out, socket); err != nil && ctx.Err() == nil {
			fmt.Fprintf(out, "(MCP tour failed: %v)\n", err)
		}
		fmt.Fprintf(out, `
Try, in another terminal:
  export HARNESS_SOCKET=%s
  %[2]s list                          # the agent's state, prompt and choices
  %[2]s send demo "another task" --enter   # it works again and asks again
  %[2]s wait demo --state waiting     # returns when it asks
  %[2]s attach demo                   # its terminal (Ctrl-] detaches)
  %[2]s top                           # the terminal dashboard (q quits)

The daemon's log: %s
Ctrl-C stops every process the demo started and removes %s.
`, shellQuote(socket), d.me, logPath, dir)
	}
	err = <-done
	fmt.Fprintln(out, "harness demo: stopped; nothing left running")
	return err
}

// demo is one run of the demo's story.
type demo struct {
	out          io.Writer
	exe, me      string // this binary, and how a person types it
	socket       string
	stateDir     string
	repo         string
	git          bool
	dashboardURL string
	notifyFile   string // where the demo's notify sink writes its message
}

// story prints the agent's story as it happens: the dashboard, the agent
// waiting with its choices and the ways to answer, the answer, the diff
// it made and how to land it.
func (d *demo) story(ctx context.Context, answerAfter time.Duration) error {
	var info api.DaemonInfo
	if err := client.CallOnce(ctx, d.socket, api.OpDaemonInfo, api.NoArgs{}, &info); err != nil {
		return fmt.Errorf("daemon_info: %w", err)
	}
	u, err := url.Parse(info.MCPURL)
	if err != nil || info.MCPURL == "" {
		return fmt.Errorf("the daemon serves no dashboard (mcp_url %q)", info.MCPURL)
	}
	d.dashboardURL = u.Scheme + "://" + u.Host
	tok, _, err := dashtoken.Mint(d.stateDir, []string{"read", "write", "input"}, time.Now())
	if err != nil {
		return fmt.Errorf("mint a dashboard token: %w", err)
	}
	sock := "--socket " + shellQuote(d.socket)
	fmt.Fprintf(d.out, `harness demo: a throw-away daemon, running the built-in demo agent (no model, no network)

The dashboard: %s/
  sign in with this token (grant read, write, input): %s
  the CLI reaches the same daemon with %s

`, d.dashboardURL, tok, sock)
	d.pair(ctx)
	var desc api.Description
	if err := client.CallOnce(ctx, d.socket, api.OpDescribe, api.NameArg{Name: demoAgent}, &desc); err != nil {
		return fmt.Errorf("describe %s: %w", demoAgent, err)
	}
	workdir := d.repo
	if wt := desc.Config.Worktree; wt != nil {
		workdir = wt.Path
		fmt.Fprintf(d.out, "The agent %q works in a git worktree of the demo repository %s,\n  on branch %s, in %s.\n", demoAgent, wt.Repo, wt.Branch, wt.Path)
	} else {
		fmt.Fprintf(d.out, "The agent %q works in %s.\n", demoAgent, workdir)
	}
	fmt.Fprintf(d.out, "  Its task: %q. It works on it, then asks before it edits a file.\n\n", demoTask)

	w, err := d.waitAgent(ctx, api.AgentWaiting)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "The agent is waiting (%s): %s\n", w.WaitingFor, w.Prompt)
	for i, c := range w.Choices {
		fmt.Fprintf(d.out, "  %d. %s\n", i+1, c)
	}
	fmt.Fprintf(d.out, `Answer it as you would any agent's prompt:
  %s %s answer %s Yes        (or No, or a choice's number)
  %s/h/%s   (its page: one button per choice)
  %s %s attach %s            (its own terminal: arrows and Enter)
`, d.me, sock, demoAgent, d.dashboardURL, demoAgent, d.me, sock, demoAgent)
	links := d.actionLinks(ctx)
	if len(links) > 0 {
		fmt.Fprintln(d.out, "  or a link from its notification (each works once, for this prompt only; open it to see, POST to act):")
		for _, l := range links {
			fmt.Fprintf(d.out, "    %-4s %s\n", l.Label, l.URL)
		}
	}
	if answerAfter > 0 {
		fmt.Fprintf(d.out, "\nNo terminal on stdin: answering Yes in %s, as a person would:\n", answerAfter)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(answerAfter):
		}
		if err := d.answerYes(ctx, links, sock); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(d.out, "\nWaiting for your answer…")
	}
	if _, err := d.waitAgent(ctx, api.AgentReady); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\nAnswered: the agent is ready again.\n")
	if !d.git {
		fmt.Fprintf(d.out, "Without git there is no diff to show: look at %s.\n", filepath.Join(workdir, "README.md"))
		return nil
	}
	diff, err := d.harness(ctx, "diff", demoAgent)
	if err != nil {
		return fmt.Errorf("harness diff: %w", err)
	}
	if !strings.Contains(diff, "@@") {
		fmt.Fprintln(d.out, "Its worktree has no changes (it was told No): nothing to land.")
		return nil
	}
	fmt.Fprintf(d.out, "What it changed ($ %s %s diff %s; also its page's Changes view, where a line comment goes back to it):\n\n%s\n", d.me, sock, demoAgent, diff)
	fmt.Fprintf(d.out, "To land it: commit what it left, merge branch %s into the demo repository's main, remove the worktree:\n  %s %s land %s\n",
		desc.Config.Worktree.Branch, d.me, sock, demoAgent)
	if answerAfter > 0 {
		fmt.Fprintf(d.out, "\nNo terminal on stdin: landing it, as a person would (--keep: the agent stays for you to try):\n$ %s %s land %s --keep\n", d.me, sock, demoAgent)
		out, err := d.harness(ctx, "land", demoAgent, "--keep", "--message", "README: a line from the demo agent")
		if err != nil {
			return fmt.Errorf("harness land: %w", err)
		}
		fmt.Fprint(d.out, out)
		log, err := d.gitOut(ctx, d.repo, "log", "--oneline", "-2")
		if err != nil {
			return err
		}
		fmt.Fprintf(d.out, "The demo repository's main now (git log --oneline -2):\n%s", log)
	}
	return nil
}

// harness runs this binary's CLI against the demo's daemon and returns
// what it printed.
func (d *demo) harness(ctx context.Context, args ...string) (string, error) {
	c := exec.CommandContext(ctx, d.exe, append([]string{"--socket", d.socket}, args...)...)
	out, err := c.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// pair prints a pairing URL and its QR code for the listener for people.
// On the demo's loopback listener only this machine's browser can use it;
// docs/remote.md says how a phone on the LAN pairs.
func (d *demo) pair(ctx context.Context) {
	var p api.PairResult
	if err := client.CallOnce(ctx, d.socket, api.OpPair, api.PairArgs{Name: "demo-phone", Grant: []string{"read", "input"}, TTLS: 600}, &p); err != nil {
		fmt.Fprintf(d.out, "(no pairing: %v)\n\n", err)
		return
	}
	fmt.Fprintf(d.out, "Pair a device (grant read, input; the code works once, for 10 minutes):\n  %s\n", p.URL)
	if err := writeQR(d.out, p.URL); err != nil {
		fmt.Fprintf(d.out, "(no QR code: %v)\n", err)
	}
	fmt.Fprintf(d.out, "  (the demo listens on loopback: a phone on your LAN needs [web] listen on its address with tls = \"auto\", see docs/remote.md)\n\n")
}

// demoLink is one action link of the demo's notification.
type demoLink struct {
	Label  string `json:"label"`
	URL    string `json:"url"`
	Method string `json:"method"`
}

// actionLinks waits briefly for the demo's notify sink to write the
// waiting message and returns its action links (those with a method).
func (d *demo) actionLinks(ctx context.Context) []demoLink {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var msg struct {
			Event   string     `json:"event"`
			Actions []demoLink `json:"actions"`
		}
		if b, err := os.ReadFile(d.notifyFile); err == nil && json.Unmarshal(b, &msg) == nil && msg.Event == "waiting" {
			var links []demoLink
			for _, a := range msg.Actions {
				if a.Method == "POST" && a.URL != "" {
					links = append(links, a)
				}
			}
			return links
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// answerYes answers the demo agent's prompt Yes: by POSTing its action
// link, as a phone's notification button does, or with harness answer.
func (d *demo) answerYes(ctx context.Context, links []demoLink, sock string) error {
	for _, l := range links {
		if l.Label != "Yes" {
			continue
		}
		fmt.Fprintf(d.out, "$ curl -X POST %s    (the notification's Yes button)\n", l.URL)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.URL, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("action link: %w", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("action link: %s", resp.Status)
		}
		fmt.Fprintf(d.out, "%s: answered Yes; the same link again would be 410 Gone\n", resp.Status)
		return nil
	}
	fmt.Fprintf(d.out, "$ %s %s answer %s Yes\n", d.me, sock, demoAgent)
	out, err := d.harness(ctx, "answer", demoAgent, "Yes")
	if err != nil {
		return fmt.Errorf("harness answer: %w", err)
	}
	fmt.Fprint(d.out, out)
	return nil
}

// waitAgent waits, as `harness wait --state` does, until the demo agent
// is in state; a person may take long to answer, so a wait that times out
// is asked again.
func (d *demo) waitAgent(ctx context.Context, state api.AgentState) (api.WaitResult, error) {
	for {
		var res api.WaitResult
		err := client.CallOnce(ctx, d.socket, api.OpWait, api.WaitArgs{Name: demoAgent, State: []api.AgentState{state}, TimeoutS: 600}, &res)
		if err != nil {
			return res, fmt.Errorf("wait for %s to be %s: %w", demoAgent, state, err)
		}
		if !res.TimedOut {
			return res, nil
		}
	}
}

func (d *demo) gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	c := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	b, err := c.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(b))
	}
	return string(b), nil
}

// demoRepo makes the demo repository: a README, then git init and one
// commit of it, as its own author whatever the user's git config says.
func demoRepo(ctx context.Context, repo string) error {
	if err := os.MkdirAll(repo, 0o700); err != nil {
		return fmt.Errorf("demo repository: %w", err)
	}
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte(demoReadme), 0o600); err != nil {
		return fmt.Errorf("demo repository: %w", err)
	}
	// Without git the directory and its README stay: the agent works there.
	if _, err := exec.LookPath("git"); err != nil {
		return fmt.Errorf("git is not on PATH")
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "README.md"},
		{"-c", "user.name=harness demo", "-c", "user.email=demo@harness.invalid", "-c", "commit.gpgsign=false",
			"commit", "-q", "-m", "The demo repository"},
	} {
		c := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, args...)...)
		if b, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w: %s", args[0], err, bytes.TrimSpace(b))
		}
	}
	return nil
}

const demoReadme = "# A demo repository\n\nMade by `harness demo`; the demo agent edits this file in a worktree of its own.\n"

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string { return `"` + tomlEscape(s) + `"` }

// tomlEscape escapes s for the inside of a TOML basic string.
func tomlEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
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
	names := make([]string, len(tools.Tools))
	for i, t := range tools.Tools {
		names[i] = t.Name
	}
	fmt.Fprintf(out, "Through the MCP gateway an agent's session (read-only here) sees %d tools, harness's own and the demo upstream's:\n", len(names))
	line := " "
	for _, n := range names {
		if len(line)+1+len(n) > 100 {
			fmt.Fprintln(out, line)
			line = " "
		}
		line += " " + n
	}
	fmt.Fprintln(out, line)
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "demo__echo", Arguments: map[string]any{"text": "hello through the broker"}})
	if err == nil && len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			fmt.Fprintf(out, "tools/call demo__echo -> %s\n", tc.Text)
		}
	}
	res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: "harness_stop", Arguments: map[string]any{"name": demoAgent}})
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

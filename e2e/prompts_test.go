//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const reviewPrompt = `---
description: Review a diff
arguments:
  - name: topic
    description: what to look at
    required: true
  - name: tone
---
Review the diff for {{topic}}.{{tone}}
`

func promptNames(t *testing.T, s *mcp.ClientSession) []string {
	t.Helper()
	res, err := s.ListPrompts(context.Background(), &mcp.ListPromptsParams{})
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	var names []string
	for _, p := range res.Prompts {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

func promptsConfig(dir string, extra string) string {
	return fmt.Sprintf("[mcp.prompts]\npaths = [%q]\n%s", dir, extra)
}

func TestScenario_APromptFileBecomesAFleetWideSlashCommand(t *testing.T) {
	pdir := t.TempDir()
	tdir := t.TempDir()
	os.WriteFile(filepath.Join(pdir, "review.md"), []byte(reviewPrompt), 0o600)
	f := newFleet(t, promptsConfig(pdir, tokenHarness("agent", tdir, "")))
	changedA := make(chan struct{}, 4)
	changedB := make(chan struct{}, 4)
	a := f.mcpSession("", false, &mcp.ClientOptions{
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { changedA <- struct{}{} },
	})
	b := f.mcpSession(token(t, filepath.Join(tdir, "agent.token")), false, &mcp.ClientOptions{
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { changedB <- struct{}{} },
	})
	for _, s := range []*mcp.ClientSession{a, b} {
		if got := promptNames(t, s); !slices.Equal(got, []string{"review"}) {
			t.Fatalf("prompts before: %v", got)
		}
	}
	os.WriteFile(filepath.Join(pdir, "plan.md"), []byte("Make a plan.\n"), 0o600)
	f.MustRun("reload")
	for name, ch := range map[string]chan struct{}{"unattributed": changedA, "attributed": changedB} {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s session got no notifications/prompts/list_changed", name)
		}
	}
	for _, s := range []*mcp.ClientSession{a, b} {
		if got := promptNames(t, s); !slices.Equal(got, []string{"plan", "review"}) {
			t.Fatalf("prompts after reload: %v", got)
		}
	}

	res, err := a.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "review", Arguments: map[string]string{"topic": "error handling"}})
	if err != nil {
		t.Fatalf("prompts/get: %v", err)
	}
	if len(res.Messages) != 1 || res.Description != "Review a diff" {
		t.Fatalf("prompts/get: %+v", res)
	}
	if tc, ok := res.Messages[0].Content.(*mcp.TextContent); !ok || !strings.Contains(tc.Text, "Review the diff for error handling.") {
		t.Fatalf("prompt text: %+v", res.Messages[0].Content)
	}
	if _, err := a.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "review", Arguments: map[string]string{}}); err == nil || !strings.Contains(err.Error(), "topic") {
		t.Fatalf("missing required argument: %v", err)
	}
}

func TestScenario_MalformedPromptIsSkippedNotFatal(t *testing.T) {
	pdir := t.TempDir()
	os.WriteFile(filepath.Join(pdir, "good.md"), []byte(reviewPrompt), 0o600)
	os.WriteFile(filepath.Join(pdir, "broken.md"), []byte("---\ndescription: [unclosed\n"), 0o600)
	f := newFleet(t, promptsConfig(pdir, ""))
	s := f.mcpSession("", false, nil)
	if got := promptNames(t, s); !slices.Equal(got, []string{"good"}) {
		t.Fatalf("prompts: %v", got)
	}
	var info struct {
		Warnings []string `json:"warnings"`
	}
	f.MustJSON(&info, "daemon-info")
	found := false
	for _, w := range info.Warnings {
		found = found || strings.Contains(w, "broken.md")
	}
	if !found {
		t.Fatalf("daemon-info warnings do not name broken.md: %v", info.Warnings)
	}
	logText, _ := os.ReadFile(f.LogPath)
	if !strings.Contains(string(logText), "broken.md") {
		t.Fatal("the daemon log does not name the skipped file")
	}
}

func TestPrompts_WatchedDirectoryReloadsByItself(t *testing.T) {
	pdir := t.TempDir()
	f := newFleet(t, "[daemon]\nwatch_config = true\n"+promptsConfig(pdir, ""))
	changed := make(chan struct{}, 4)
	s := f.mcpSession("", false, &mcp.ClientOptions{
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { changed <- struct{}{} },
	})
	if got := promptNames(t, s); len(got) != 0 {
		t.Fatalf("prompts before: %v", got)
	}
	os.WriteFile(filepath.Join(pdir, "fresh.md"), []byte("Fresh.\n"), 0o600)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no prompts/list_changed after a file appeared in a watched directory")
	}
	if got := promptNames(t, s); !slices.Equal(got, []string{"fresh"}) {
		t.Fatalf("prompts after: %v", got)
	}
}

func TestWatch_TurnedOnByAReloadFollowsTheFile(t *testing.T) {
	f := newFleet(t, sleeperConfig)
	f.WriteConfig("[daemon]\nwatch_config = true\n" + sleeperConfig)
	f.MustRun("reload")
	f.WriteConfig("[daemon]\nwatch_config = true\n" + sleeperConfig + "\n[harness.added]\ncmd = \"true\"\n")
	f.WaitFor("the watcher to load the edited file", 10*time.Second, func() bool {
		var us []unitInfo
		f.MustJSON(&us, "list")
		return len(us) == 2
	})
}

func TestWatch_AHarnessFileWrittenByHandIsLoaded(t *testing.T) {
	f := newFleet(t, "[daemon]\nwatch_config = true\n"+sleeperConfig)
	dir := filepath.Join(filepath.Dir(f.Config), "harness.d")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "byhand.toml"), []byte("[harness.byhand]\ncmd = \"true\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.WaitFor("the watcher to load the harness file written by hand", 10*time.Second, func() bool {
		var us []unitInfo
		f.MustJSON(&us, "list")
		return len(us) == 2
	})
	if err := os.Remove(filepath.Join(dir, "byhand.toml")); err != nil {
		t.Fatal(err)
	}
	f.WaitFor("the watcher to drop the removed harness file", 10*time.Second, func() bool {
		var us []unitInfo
		f.MustJSON(&us, "list")
		return len(us) == 1
	})
}

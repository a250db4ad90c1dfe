//go:build interop

package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const reviewPrompt = `---
description: Review one topic in depth
arguments:
  - name: topic
    description: What to review
    required: true
  - name: tone
    description: How to say it
---

Please review {{topic}} thoroughly.{{tone}}
`

// A markdown file with front matter in [mcp.prompts] paths is
// listed to the TypeScript SDK client through `harness mcp` with its
// description and arguments; prompts/get fills {{topic}} into a user
// message; leaving out the required argument is an invalid-params error
// (a JSON-RPC error, -32602), and the session still answers afterwards.
func TestTS_PromptsThroughBridge(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "prompts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "review.md"), []byte(reviewPrompt), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFleet(t, fmt.Sprintf("[mcp.prompts]\npaths = [%q]\n", dir))

	const topic = "the-interop-topic"
	c, steps := runTS(t,
		connectStep("h", f.bridge()),
		opStep("h", "listPrompts"),
		opStep("h", "getPrompt", "name", "review", "args", map[string]any{"topic": topic}),
		opStep("h", "getPrompt", "name", "review", "args", map[string]any{"tone": " Be kind."}),
		opStep("h", "getPrompt", "name", "review", "args", map[string]any{"topic": "again"}),
	)
	c.must(steps[0], nil)

	var listed struct {
		Prompts []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			Arguments   []struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				Required    bool   `json:"required"`
			} `json:"arguments"`
		} `json:"prompts"`
	}
	c.must(steps[1], &listed)
	if len(listed.Prompts) != 1 {
		t.Fatalf("prompts/list: %+v, want the one prompt review\n%s", listed.Prompts, c.transcript())
	}
	p := listed.Prompts[0]
	if p.Name != "review" || p.Description != "Review one topic in depth" || len(p.Arguments) != 2 ||
		p.Arguments[0].Name != "topic" || !p.Arguments[0].Required || p.Arguments[0].Description != "What to review" ||
		p.Arguments[1].Name != "tone" || p.Arguments[1].Required {
		t.Fatalf("prompts/list entry %+v does not carry the front matter", p)
	}

	type message struct {
		Role    string `json:"role"`
		Content struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	var got struct {
		Description string    `json:"description"`
		Messages    []message `json:"messages"`
	}
	c.must(steps[2], &got)
	if len(got.Messages) != 1 || got.Messages[0].Role != "user" || got.Messages[0].Content.Type != "text" ||
		!strings.Contains(got.Messages[0].Content.Text, "Please review "+topic+" thoroughly.") ||
		strings.Contains(got.Messages[0].Content.Text, "{{") {
		t.Fatalf("prompts/get review {topic: %s}: %+v", topic, got)
	}

	missing := steps[3]
	if missing.OK {
		t.Fatalf("prompts/get without the required topic succeeded: %s", missing.Result)
	}
	if missing.ErrorCode == nil || *missing.ErrorCode != -32602 || !strings.Contains(missing.Error, "topic") {
		t.Errorf("prompts/get without topic: code %v error %q, want -32602 (invalid params) naming topic", missing.ErrorCode, missing.Error)
	}
	c.must(steps[4], nil) // the session goes on
}

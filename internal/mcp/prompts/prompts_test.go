package prompts

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const reviewMD = `---
# a comment line
description: Review a change   # trailing comment
title: "Code review"
tags: [go, review]       # unknown keys are ignored
model:
  name: something
  nested: [1, 2]
arguments:
  - name: path
    description: 'File to review, it''s required'
    required: true
  - name: focus
    description: What to look at
    required: false
---

Review {{path}} with a focus on {{ focus }}.
Leave {{unknown}} alone.
`

func loadOne(t *testing.T, files map[string]string) (*Set, []Warning, string) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	s, warns := Load([]string{dir})
	return s, warns, dir
}

func TestLoadGoodFiles(t *testing.T) {
	s, warns, _ := loadOne(t, map[string]string{
		"review.md":   reviewMD,
		"plain.md":    "Just a body, no front matter.\n",
		"fix bug!.md": "---\ndescription: Fix it\narguments: [{name: issue, required: true}, {name: note}]\n---\nFix {{issue}}.{{note}}",
		"notes.txt":   "not a prompt",
		".hidden.md":  "editor leftover",
	})
	if len(warns) != 0 {
		t.Fatalf("warnings: %v", warns)
	}
	if got, want := s.Names(), []string{"fix-bug-", "plain", "review"}; !slices.Equal(got, want) {
		t.Fatalf("Names = %v, want %v", got, want)
	}
	ps := s.Prompts()
	if len(ps) != 3 || ps[0].Name != "fix-bug-" || ps[2].Name != "review" {
		t.Fatalf("Prompts not sorted by name: %+v", ps)
	}
	review := ps[2]
	if review.Description != "Review a change" || review.Title != "Code review" {
		t.Fatalf("review = %+v", review)
	}
	want := []mcp.PromptArgument{
		{Name: "path", Description: "File to review, it's required", Required: true},
		{Name: "focus", Description: "What to look at"},
	}
	if len(review.Arguments) != len(want) {
		t.Fatalf("arguments = %+v", review.Arguments)
	}
	for i, a := range review.Arguments {
		if *a != want[i] {
			t.Fatalf("argument %d = %+v, want %+v", i, *a, want[i])
		}
	}
	fix := ps[0]
	if fix.Description != "Fix it" || len(fix.Arguments) != 2 || !fix.Arguments[0].Required || fix.Arguments[1].Required || fix.Arguments[1].Name != "note" {
		t.Fatalf("flow-style arguments: %+v %+v", fix, fix.Arguments)
	}
	if ps[1].Description != "" || len(ps[1].Arguments) != 0 {
		t.Fatalf("plain = %+v", ps[1])
	}
	// Prompts hands out copies: changing one does not change the snapshot.
	review.Arguments[0].Required = false
	if !s.Prompts()[2].Arguments[0].Required {
		t.Fatal("Prompts returned shared argument values")
	}
}

func text(t *testing.T, r *mcp.GetPromptResult) string {
	t.Helper()
	if len(r.Messages) != 1 || r.Messages[0].Role != "user" {
		t.Fatalf("messages = %+v", r.Messages)
	}
	tc, ok := r.Messages[0].Content.(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %T, want *mcp.TextContent", r.Messages[0].Content)
	}
	return tc.Text
}

func TestGetFillsPlaceholders(t *testing.T) {
	s, _, _ := loadOne(t, map[string]string{"review.md": reviewMD, "plain.md": "Body {{x}}\n"})
	r, err := s.Get("review", map[string]string{"path": "main.go", "focus": "{{path}} errors", "extra": "ignored"})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got, want := text(t, r), "Review main.go with a focus on {{path}} errors.\nLeave {{unknown}} alone.\n"; got != want {
		t.Fatalf("body = %q, want %q", got, want)
	}
	if r.Description != "Review a change" {
		t.Fatalf("description = %q", r.Description)
	}
	r, err = s.Get("review", map[string]string{"path": "a.go"})
	if err != nil {
		t.Fatalf("Get without optional: %v", err)
	}
	if got := text(t, r); !strings.HasPrefix(got, "Review a.go with a focus on .\n") {
		t.Fatalf("absent optional not emptied: %q", got)
	}
	r, err = s.Get("plain", nil)
	if err != nil || text(t, r) != "Body {{x}}\n" {
		t.Fatalf("plain = %v, %v", r, err)
	}
}

func TestGetRefusesMissingRequiredAndUnknown(t *testing.T) {
	s, _, _ := loadOne(t, map[string]string{"review.md": reviewMD})
	for _, args := range []map[string]string{nil, {"focus": "x"}, {"path": ""}} {
		_, err := s.Get("review", args)
		if !errors.Is(err, errcode.ErrInvalidArgument) || errcode.Of(err) != errcode.InvalidArgument {
			t.Fatalf("args %v: err = %v, want invalid_argument", args, err)
		}
		if !strings.Contains(err.Error(), `"path"`) {
			t.Fatalf("error %q does not name the argument", err)
		}
	}
	_, err := s.Get("nope", nil)
	if !errors.Is(err, errcode.ErrInvalidArgument) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("unknown prompt: %v", err)
	}
	var nilSet *Set
	if _, err := nilSet.Get("review", nil); !errors.Is(err, errcode.ErrInvalidArgument) {
		t.Fatalf("nil set: %v", err)
	}
	if nilSet.Prompts() != nil || nilSet.Names() != nil {
		t.Fatal("nil set is not empty")
	}
}

func TestMalformedFilesSkippedWithWarning(t *testing.T) {
	bad := map[string]string{
		"unterminated.md": "---\ndescription: never closed\nbody\n",
		"badyaml.md":      "---\ndescription: [unclosed\n---\nbody\n",
		"noname.md":       "---\narguments:\n  - description: nameless\n---\nbody\n",
		"badrequired.md":  "---\narguments:\n  - name: a\n    required: maybe\n---\nbody\n",
		"badindent.md":    "---\ndescription: x\n   oops: y\n  bad: z\n---\nbody\n",
		"notamap.md":      "---\n- just\n- a list\n---\nbody\n",
		"dupkey.md":       "---\ndescription: a\ndescription: b\n---\nbody\n",
	}
	files := map[string]string{"good.md": "---\ndescription: fine\n---\nok\n", "review.md": reviewMD}
	for k, v := range bad {
		files[k] = v
	}
	s, warns, dir := loadOne(t, files)
	if got, want := s.Names(), []string{"good", "review"}; !slices.Equal(got, want) {
		t.Fatalf("Names = %v, want %v", got, want)
	}
	if len(warns) != len(bad) {
		t.Fatalf("got %d warnings, want %d: %v", len(warns), len(bad), warns)
	}
	for _, w := range warns {
		if _, ok := bad[filepath.Base(w.Path)]; !ok || filepath.Dir(w.Path) != dir {
			t.Fatalf("warning %v does not name a malformed file", w)
		}
		if !strings.HasPrefix(w.String(), "prompts: "+w.Path+": ") || !strings.Contains(w.Message, "skipped") {
			t.Fatalf("warning string %q", w.String())
		}
	}
	if w := warns[slices.IndexFunc(warns, func(w Warning) bool { return strings.HasSuffix(w.Path, "noname.md") })]; !strings.Contains(w.Message, "without a name") {
		t.Fatalf("noname warning: %v", w)
	}
}

func TestDuplicateNames(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	writeFiles(t, a, map[string]string{"deploy.md": "from a", "x y.md": "first", "x-y.md": "second"})
	writeFiles(t, b, map[string]string{"deploy.md": "from b", "other.md": "b only"})
	s, warns := Load([]string{a, b, a})
	if got, want := s.Names(), []string{"deploy", "other", "x-y"}; !slices.Equal(got, want) {
		t.Fatalf("Names = %v, want %v", got, want)
	}
	for name, want := range map[string]string{"deploy": "from a", "x-y": "first"} {
		r, err := s.Get(name, nil)
		if err != nil || text(t, r) != want {
			t.Fatalf("%s served %v (%v), want %q", name, r, err, want)
		}
	}
	got := []string{}
	for _, w := range warns {
		got = append(got, w.Path)
	}
	want := []string{filepath.Join(a, "x-y.md"), filepath.Join(b, "deploy.md")}
	if !slices.Equal(got, want) {
		t.Fatalf("duplicate warnings name %v, want %v", got, want)
	}
}

func TestMissingDirectoryIsAWarning(t *testing.T) {
	good := t.TempDir()
	writeFiles(t, good, map[string]string{"p.md": "body"})
	missing := filepath.Join(t.TempDir(), "absent")
	s, warns := Load([]string{missing, good})
	if !slices.Equal(s.Names(), []string{"p"}) {
		t.Fatalf("Names = %v", s.Names())
	}
	if len(warns) != 1 || warns[0].Path != missing || warns[0].String() != "prompts: "+missing+": directory does not exist" {
		t.Fatalf("warnings = %v", warns)
	}
}

func TestSizeBound(t *testing.T) {
	s, warns, dir := loadOne(t, map[string]string{
		"fits.md": strings.Repeat("a", MaxFileSize),
		"big.md":  strings.Repeat("a", MaxFileSize+1),
	})
	if !slices.Equal(s.Names(), []string{"fits"}) {
		t.Fatalf("Names = %v", s.Names())
	}
	if len(warns) != 1 || warns[0].Path != filepath.Join(dir, "big.md") || !strings.Contains(warns[0].Message, "limit") {
		t.Fatalf("warnings = %v", warns)
	}
}

func TestSubdirectoryNamedMDIsIgnored(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"p.md": "body"})
	s, warns := Load([]string{dir})
	if !slices.Equal(s.Names(), []string{"p"}) || len(warns) != 0 {
		t.Fatalf("Names = %v, warnings = %v", s.Names(), warns)
	}
}

func TestFIFONamedLikeAPromptIsSkippedNotWaitedOn(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "real.md"), []byte("Real.\n"), 0o600)
	done := make(chan *Set, 1)
	go func() { s, _ := Load([]string{dir}); done <- s }()
	select {
	case s := <-done:
		if names := s.Names(); len(names) != 1 || names[0] != "real" {
			t.Fatalf("prompts: %v", names)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Load blocked on a FIFO")
	}
}

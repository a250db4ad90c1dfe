package docstest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// maxReadme is the most README.md may hold: a front door, not a manual.
const maxReadme = 12 << 10

func TestReadmeIsAFrontDoor(t *testing.T) {
	info, err := os.Stat(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() > maxReadme {
		t.Errorf("README.md is %d bytes, more than %d: move reference text to a page under docs/", info.Size(), maxReadme)
	}
}

// pages are the user documentation: README.md and docs/*.md.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(root, "README.md")}, docs...)
}

var (
	mdLink  = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	htmlSrc = regexp.MustCompile(`<(?:img|a)\s[^>]*(?:src|href)="([^"]+)"`)
)

// links returns the targets of the links of a markdown page, outside code
// blocks and code spans.
func links(md string) []string {
	var out []string
	in := false
	for line := range strings.SplitSeq(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if in {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
		for _, m := range htmlSrc.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

var codeSpan = regexp.MustCompile("`[^`]*`")

// TestRelativeLinksResolve: every relative link of the README and of the
// pages under docs/ names a file that exists and, with a #fragment into a
// markdown page, a heading of that page.
func TestRelativeLinksResolve(t *testing.T) {
	for _, page := range pages(t) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, page)
		for _, target := range links(string(data)) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s, which does not exist", name, target)
				continue
			}
			if frag == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			body, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !anchors(string(body))[frag] {
				t.Errorf("%s links to %s: no heading of that page has the anchor #%s", name, target, frag)
			}
		}
	}
}

// anchors are the anchors GitHub gives the headings of a markdown page.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	in := false
	for line := range strings.SplitSeq(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if in || !strings.HasPrefix(line, "#") {
			continue
		}
		out[slug(strings.TrimLeft(line, "# "))] = true
	}
	return out
}

// slug is GitHub's anchor of a heading: lower case, spaces to hyphens,
// every other character that is not a letter, digit, "-" or "_" dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A comment is read by someone with the repository and nothing else, so
// it may point only at what the repository holds: the design notes in
// docs/design, never a document outside it (nor its numbered specs and
// decision records) nor the number of an issue in a tracker the reader
// may not have. Upstream references of the form
// owner/repo#N (golang/go#75804) name public issues and stay.
//
// The forbidden strings are assembled here so that this file does not
// match itself.
var (
	outsideDocs = []string{
		"DESIGN" + " §",
		"DESIGN" + ".md",
		".." + "/shared",
	}
	issueCitation = regexp.MustCompile(`\b[Ii]ssues? #?\d+|\(#\d+\)` + "|" +
		// a citation wrapped onto the next comment line: "(issue\n// 22)"
		`\b[Ii]ssues?\s*\n\s*//\s*#?\d+`)
	// numbered specs and decision records of that outside document
	outsideIDs = regexp.MustCompile(`\b(SPEC|ADR)` + `-\d+\b`)
	designPath = regexp.MustCompile(`docs/design/[A-Za-z0-9_./-]*\.md`)
)

// TestCommentsCiteOnlyTheRepository fails on a Go file (or a page of
// docs/design) that cites the outside design document or an issue number,
// and on a docs/design page cited by a Go file that does not exist.
func TestCommentsCiteOnlyTheRepository(t *testing.T) {
	root := moduleRoot(t)
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if strings.HasSuffix(path, ".go") || (filepath.Dir(rel) == filepath.Join("docs", "design") && strings.HasSuffix(path, ".md")) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("found %d files: the walk starts at the wrong directory (%s)", len(files), root)
	}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		rel, _ := filepath.Rel(root, path)
		for _, s := range outsideDocs {
			if i := strings.Index(text, s); i >= 0 {
				t.Errorf("%s:%d: %q cites a document outside the repository: point at docs/design instead", rel, lineOf(text, i), s)
			}
		}
		for _, loc := range outsideIDs.FindAllStringIndex(text, -1) {
			t.Errorf("%s:%d: %q cites a document outside the repository: point at docs/design instead", rel, lineOf(text, loc[0]), text[loc[0]:loc[1]])
		}
		for _, loc := range issueCitation.FindAllStringIndex(text, -1) {
			t.Errorf("%s:%d: %q cites an issue number: say the why in words", rel, lineOf(text, loc[0]), text[loc[0]:loc[1]])
		}
		if !strings.HasSuffix(path, ".go") {
			continue
		}
		for _, loc := range designPath.FindAllStringIndex(text, -1) {
			cited := text[loc[0]:loc[1]]
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(cited))); err != nil {
				t.Errorf("%s:%d: cites %s, which does not exist", rel, lineOf(text, loc[0]), cited)
			}
		}
	}
}

// lineOf is the 1-based line of byte offset i in text.
func lineOf(text string, i int) int { return strings.Count(text[:i], "\n") + 1 }

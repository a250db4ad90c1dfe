package archtest

import (
	"go/build/constraint"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tierDirs are the folders whose every Go file belongs to a test tier
// behind a build tag (docs/design/testing.md): without the tag a file
// there would be built by `go test ./...`, which must need Go alone.
var tierDirs = map[string]string{"e2e": "e2e", "interop": "interop"}

// TestTierFilesCarryTheirTag: each Go file of a tier's folder has a
// //go:build line that requires the tier's tag.
func TestTierFilesCarryTheirTag(t *testing.T) {
	root := moduleRoot(t)
	checked := 0
	for dir, tag := range tierDirs {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			checked++
			if problem := tierProblem(f, tag); problem != "" {
				t.Errorf("%s: %s", strings.TrimPrefix(f, root+"/"), problem)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("found only %d files in %v: the walk is broken", checked, tierDirs)
	}
}

// tierProblem says why file f is not held behind tag, or "".
func tierProblem(f, tag string) string {
	data, err := os.ReadFile(f)
	if err != nil {
		return err.Error()
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "package ") {
			break
		}
		if !constraint.IsGoBuild(line) {
			continue
		}
		expr, err := constraint.Parse(line)
		if err != nil {
			return "its //go:build line does not parse: " + err.Error()
		}
		// The tag is required when the file is excluded without it,
		// whatever the other tags say.
		if expr.Eval(func(t string) bool { return t != tag }) {
			return "its //go:build line does not require the " + tag + " tag"
		}
		return ""
	}
	return "no //go:build " + tag + " line: go test ./... would build it"
}

package gitdiff

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/harness-dev/harness/internal/api"
)

// files reads `git diff -z --name-status` and `-z --numstat` of the same
// diff (the same files in the same order) into the answer's files.
func files(names, counts string) ([]api.DiffFile, error) {
	out := []api.DiffFile{}
	f := strings.Split(names, "\x00")
	for i := 0; i < len(f) && f[i] != ""; {
		st := f[i]
		df := api.DiffFile{Status: status(st), Hunks: []api.DiffHunk{}}
		switch st[0] {
		case 'R', 'C':
			if i+2 >= len(f) {
				return nil, fmt.Errorf("name-status: %q without its paths", st)
			}
			df.OldPath, df.Path = f[i+1], f[i+2]
			i += 3
		default:
			if i+1 >= len(f) {
				return nil, fmt.Errorf("name-status: %q without its path", st)
			}
			df.Path = f[i+1]
			i += 2
		}
		out = append(out, df)
	}
	// numstat -z: "A\tD\tpath\0", or "A\tD\t\0old\0new\0" for a rename.
	n := strings.Split(counts, "\x00")
	k := 0
	for i := 0; i < len(n) && n[i] != ""; k++ {
		parts := strings.SplitN(n[i], "\t", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("numstat: %q", n[i])
		}
		i++
		if parts[2] == "" {
			i += 2 // a rename's two paths
		}
		if k >= len(out) {
			return nil, fmt.Errorf("numstat lists more files than name-status")
		}
		if parts[0] == "-" && parts[1] == "-" {
			out[k].Binary = true
			continue
		}
		out[k].Added, _ = strconv.Atoi(parts[0])
		out[k].Deleted, _ = strconv.Atoi(parts[1])
	}
	return out, nil
}

// status is a name-status letter (R100, C75, M, ...) in words.
func status(s string) string {
	switch s[0] {
	case 'A':
		return api.DiffAdded
	case 'D':
		return api.DiffDeleted
	case 'R':
		return api.DiffRenamed
	case 'C':
		return api.DiffCopied
	case 'T':
		return api.DiffType
	}
	return api.DiffModified
}

// ParsePatch splits a unified patch of several files (git diff --patch)
// into each file's hunks, in the order of the files. A file section a
// truncated patch ends in is incomplete, so its hunks are left out.
func ParsePatch(patch []byte, truncated bool) [][]api.DiffHunk {
	var out [][]api.DiffHunk
	var cur *api.DiffHunk
	lines := bytes.Split(patch, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	for _, b := range lines {
		l := string(b)
		switch {
		case strings.HasPrefix(l, "diff --git "):
			out = append(out, []api.DiffHunk{})
			cur = nil
			continue
		case len(out) == 0:
			continue
		case strings.HasPrefix(l, "@@ "):
			h, ok := hunkHeader(l)
			if !ok {
				cur = nil
				continue
			}
			hs := &out[len(out)-1]
			*hs = append(*hs, h)
			cur = &(*hs)[len(*hs)-1]
			continue
		}
		if cur == nil || l == "" {
			continue
		}
		switch l[0] {
		case ' ', '+', '-':
			cur.Lines = append(cur.Lines, l)
		case '\\': // "\ No newline at end of file"
		default:
			cur = nil
		}
	}
	if truncated && len(out) > 0 {
		out[len(out)-1] = []api.DiffHunk{}
	}
	return out
}

// hunkHeader reads "@@ -a,b +c,d @@ ..." (a count left out is 1).
func hunkHeader(l string) (api.DiffHunk, bool) {
	rest := strings.TrimPrefix(l, "@@ ")
	end := strings.Index(rest, " @@")
	if end < 0 {
		return api.DiffHunk{}, false
	}
	f := strings.Fields(rest[:end])
	if len(f) != 2 || !strings.HasPrefix(f[0], "-") || !strings.HasPrefix(f[1], "+") {
		return api.DiffHunk{}, false
	}
	os, ol, ok1 := rangeOf(f[0][1:])
	ns, nl, ok2 := rangeOf(f[1][1:])
	if !ok1 || !ok2 {
		return api.DiffHunk{}, false
	}
	return api.DiffHunk{OldStart: os, OldLines: ol, NewStart: ns, NewLines: nl, Lines: []string{}}, true
}

func rangeOf(s string) (start, n int, ok bool) {
	a, b, has := strings.Cut(s, ",")
	start, err := strconv.Atoi(a)
	if err != nil {
		return 0, 0, false
	}
	n = 1
	if has {
		if n, err = strconv.Atoi(b); err != nil {
			return 0, 0, false
		}
	}
	return start, n, true
}

// ParseComment reads one review comment, "path:line: text": path a
// relative path inside the checkout (no "..", not absolute), line a
// positive number, text not empty.
func ParseComment(s string) (path string, line int, text string, err error) {
	s = strings.TrimSpace(s)
	p, rest, ok := strings.Cut(s, ":")
	if !ok {
		return "", 0, "", fmt.Errorf("comment %q: want path:line: text", clip(s))
	}
	n, t, ok := strings.Cut(rest, ":")
	if !ok {
		return "", 0, "", fmt.Errorf("comment %q: want path:line: text", clip(s))
	}
	line, err = strconv.Atoi(strings.TrimSpace(n))
	if err != nil || line < 1 {
		return "", 0, "", fmt.Errorf("comment %q: line %q is not a line number (1 or more)", clip(s), clip(n))
	}
	text = strings.TrimSpace(t)
	switch {
	case p == "":
		return "", 0, "", fmt.Errorf("comment %q: no path", clip(s))
	case strings.HasPrefix(p, "/") || strings.HasPrefix(p, "\\"):
		return "", 0, "", fmt.Errorf("comment %q: path %q must be relative to the checkout", clip(s), clip(p))
	case text == "":
		return "", 0, "", fmt.Errorf("comment %q: no text after path:line:", clip(s))
	case strings.ContainsAny(p, "\n\r"):
		return "", 0, "", fmt.Errorf("comment %q: the path has a line break", clip(s))
	}
	for _, seg := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." {
			return "", 0, "", fmt.Errorf("comment %q: path %q leaves the checkout (..)", clip(s), clip(p))
		}
	}
	return p, line, text, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

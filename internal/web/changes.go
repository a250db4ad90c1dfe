package web

import (
	"context"
	"strconv"
	"strings"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// The Changes view of a harness page (docs/design/web.md): what the
// agent changed in its worktree (the diff op), a comment on any line,
// and "Send review", which queues the comments to the agent as one
// message (the review op, input class).

// changesView is the Changes section: the diff, or why there is none.
type changesView struct {
	Name  string
	Diff  *api.Diff
	Files []changedFile
	Stat  api.DiffStat
	Err   string
	// None: the harness has no git checkout; the section is left out.
	None bool
}

// Fragment is the URL of the section alone.
func (v changesView) Fragment() string { return hpath(v.Name) + "?fragment=changes" }

// changedFile is one file of the view, its lines numbered.
type changedFile struct {
	api.DiffFile
	Rows [][]diffRow // by hunk
}

// diffRow is one line of a hunk as shown: its old and new numbers (0 when
// it has none), kind and text, and At, the line a comment on it names:
// the new file's line, or for a deleted line where it was.
type diffRow struct {
	Old, New, At int
	Kind         string // add, del, ctx
	Text         string
}

// OldNo and NewNo are the numbers shown ("" for none).
func (r diffRow) OldNo() string { return lineNo(r.Old) }

// NewNo is the new side's number, "" for a deleted line.
func (r diffRow) NewNo() string { return lineNo(r.New) }

func lineNo(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// changes reads name's diff. A harness without a git checkout has no
// section (None); any other refusal is shown as a line in it.
func (s *Server) changes(ctx context.Context, name string) *changesView {
	var d api.Diff
	err := s.call(ctx, api.OpDiff, api.DiffArgs{Name: name}, &d)
	return changesOf(name, d, err)
}

// changesOf is the view of the diff op's answer d, or of its refusal err
// (a remote row's page reads its host's diff: remotepage.go).
func changesOf(name string, d api.Diff, err error) *changesView {
	v := &changesView{Name: name}
	if err != nil {
		if errcode.Of(err) == errcode.InvalidArgument && (strings.Contains(err.Error(), "not a git checkout") ||
			strings.Contains(err.Error(), "no worktree and no workdir") || strings.Contains(err.Error(), "MCP upstream")) {
			v.None = true
			return v
		}
		v.Err = errcode.Message(err)
		return v
	}
	v.Diff, v.Stat = &d, d.Stat()
	for _, f := range d.Files {
		cf := changedFile{DiffFile: f}
		for _, h := range f.Hunks {
			cf.Rows = append(cf.Rows, numberRows(h))
		}
		v.Files = append(v.Files, cf)
	}
	return v
}

// numberRows numbers a hunk's lines from its header.
func numberRows(h api.DiffHunk) []diffRow {
	rows := make([]diffRow, 0, len(h.Lines))
	o, n := h.OldStart, h.NewStart
	for _, l := range h.Lines {
		r := diffRow{Text: l[1:]}
		switch l[0] {
		case '+':
			r.Kind, r.New, r.At = "add", n, n
			n++
		case '-':
			r.Kind, r.Old, r.At = "del", o, max(n, 1)
			o++
		default:
			r.Kind, r.Old, r.New, r.At = "ctx", o, n, n
			o++
			n++
		}
		rows = append(rows, r)
	}
	return rows
}

// reviewComments are the comments of a Send review form: each "comment"
// field (the page's line comments) and each line of "comments" (typed by
// hand, the page without its script).
func reviewComments(fields []string, typed string) []string {
	out := append([]string{}, fields...)
	for _, l := range strings.Split(typed, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// changesSection is what the section's template gets: the view, and the
// page's CSRF token and whether its grant may send a review.
type changesSection struct {
	V     *changesView
	CSRF  string
	Input bool
}

func (s *Server) changesSection(ctx context.Context, rq *request, name string) *changesSection {
	return &changesSection{V: s.changes(ctx, name), CSRF: rq.sess.csrf, Input: rq.may(api.Input)}
}

// count is n and a noun, plural unless n is 1 ("1 file", "3 files").
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

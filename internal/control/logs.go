package control

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logs"
)

// Log paging limits: answers are capped; max_bytes can only
// lower the cap.
const (
	DefaultMaxBytes = 256 << 10
	DefaultLines    = 200
	maxLines        = 5000
)

// Logs answers `logs` in summary or raw format. It is the one
// implementation: the CLI and harness_logs both come here, so they page
// and cap alike.
func (c *Control) Logs(_ context.Context, a api.LogsArgs) (any, error) {
	u, err := c.lookup(a.Name)
	if err != nil {
		return nil, err
	}
	if a.MaxBytes < 0 || a.Lines < 0 {
		return nil, errcode.Errorf(errcode.InvalidArgument, "max_bytes and lines must be >= 0")
	}
	if a.MaxBytes == 0 || a.MaxBytes > DefaultMaxBytes {
		a.MaxBytes = DefaultMaxBytes
	}
	if a.Lines > maxLines {
		a.Lines = maxLines
	}
	switch a.Format {
	case "", "summary":
		if a.Offset != nil {
			return nil, errcode.Errorf(errcode.InvalidArgument, "offset pages the raw format; summary pages by cursor")
		}
		if a.Run != 0 {
			return c.runSummary(u, a)
		}
		return summary(u.log, a), nil
	case "raw":
		if a.Run != 0 {
			return nil, errcode.Errorf(errcode.InvalidArgument, "run selects entries of the summary format; raw output is not kept per run")
		}
		if a.Cursor != nil {
			return nil, errcode.Errorf(errcode.InvalidArgument, "cursor pages the summary format; raw pages by offset")
		}
		st := u.sup.Status()
		r := raw(u.log, a)
		// The ring keeps the program's bytes; a reader gets them masked
		// (docs/design/masking.md), except a secret split by a control sequence or by
		// the window's edge.
		r.Text = c.opt.Masker.String(r.Text)
		r.Cols, r.Rows = int(st.Cols), int(st.Rows)
		return r, nil
	default:
		return nil, errcode.Errorf(errcode.InvalidArgument, "format must be summary or raw, not %s", errcode.Quote(a.Format))
	}
}

// summary pages activity entries by id. Without a cursor it returns the
// newest entries; with one, the entries after it, oldest first, so that a
// poller that follows next_cursor never skips any.
func summary(l *logs.Log, a api.LogsArgs) api.LogsSummary {
	lines := a.Lines
	if lines == 0 {
		lines = DefaultLines
	}
	l.Flush()
	res := api.LogsSummary{Format: "summary", Entries: []logs.Entry{}}
	var entries []logs.Entry
	if a.Cursor == nil {
		entries = l.Tail(lines)
	} else {
		cur := *a.Cursor
		all, oldest := l.EntriesAfter(cur, maxLines)
		if len(all) == 0 {
			if newest := newestID(l); cur > newest {
				// Not a position this log has reached: answering with the
				// cursor would have the follower skip every entry up to it.
				res.Note = fmt.Sprintf("cursor %d is past the newest entry (%d); continue from next_cursor", cur, newest)
				res.NextCursor = newest
				return res
			}
		}
		if oldest > 0 && cur+1 < oldest {
			res.Note = fmt.Sprintf("cursor %d has aged out; the oldest retained entry is %d, returning the retained tail", cur, oldest)
			entries = tail(all, lines)
		} else {
			if len(all) > lines {
				all, res.Truncated = all[:lines], true
			}
			entries = all
		}
		res.NextCursor = cur
	}
	// Cap by encoded size. With a cursor keep the oldest (the poller
	// continues from next_cursor); without one keep the newest.
	size := 0
	fit := 0
	if a.Cursor == nil {
		for i := len(entries) - 1; i >= 0; i-- {
			size += entrySize(entries[i])
			if size > a.MaxBytes {
				break
			}
			fit++
		}
		if fit < len(entries) {
			entries, res.Truncated = entries[len(entries)-fit:], true
		}
	} else {
		for _, e := range entries {
			size += entrySize(e)
			if size > a.MaxBytes {
				break
			}
			fit++
		}
		if fit < len(entries) {
			entries, res.Truncated = entries[:fit], true
		}
	}
	if len(entries) > 0 {
		res.Entries = entries
		res.NextCursor = entries[len(entries)-1].ID
	} else if a.Cursor == nil {
		res.NextCursor = 0
	}
	return res
}

// newestID is the id of the log's newest entry, 0 when it has none.
func newestID(l *logs.Log) uint64 {
	if t := l.Tail(1); len(t) > 0 {
		return t[0].ID
	}
	return 0
}

func tail(es []logs.Entry, n int) []logs.Entry {
	if len(es) > n {
		return es[len(es)-n:]
	}
	return es
}

func entrySize(e logs.Entry) int {
	b, err := json.Marshal(e)
	if err != nil {
		return len(e.Text) + 64
	}
	return len(b) + 1
}

// raw pages the byte ring by absolute offset. An offset before the window
// starts at the window; one past the end repeats the whole tail with a
// note, never an empty answer, because the window may have moved past a
// poller that skipped output.
func raw(l *logs.Log, a api.LogsArgs) api.LogsRaw {
	res := api.LogsRaw{Format: "raw"}
	_, start, end := l.Raw(0, 0)
	var from int64
	switch {
	case a.Offset == nil:
		from = max(start, end-int64(a.MaxBytes))
	case *a.Offset < start:
		res.Note = fmt.Sprintf("offset %d is before the retained window [%d,%d); starting at %d", *a.Offset, start, end, start)
		from = start
	case *a.Offset > end:
		res.Note = fmt.Sprintf("offset %d is past the end of the log (%d); returning the whole retained tail", *a.Offset, end)
		from = max(start, end-int64(a.MaxBytes))
	default:
		from = *a.Offset
	}
	data, _, _ := l.Raw(from, a.MaxBytes)
	if a.Offset == nil && a.Lines > 0 {
		data, from = lastLines(data, from, a.Lines)
	}
	res.Offset = from
	res.NextOffset = from + int64(len(data))
	res.Truncated = res.NextOffset < end
	res.Text = strings.ToValidUTF8(string(data), "\uFFFD")
	return res
}

// lastLines keeps the last n lines of data and moves from accordingly.
func lastLines(data []byte, from int64, n int) ([]byte, int64) {
	cut := len(data)
	if cut > 0 && data[cut-1] == '\n' {
		cut--
	}
	for i := cut - 1; i >= 0; i-- {
		if data[i] == '\n' {
			n--
			if n == 0 {
				return data[i+1:], from + int64(i+1)
			}
		}
	}
	return data, from
}

// runSummary is `logs NAME --run N`: the retained entries of one run of
// the unit, paged like summary (the newest without a cursor, the ones
// after it with one).
func (c *Control) runSummary(u *unit, a api.LogsArgs) (api.LogsSummary, error) {
	r, known := c.opt.Runs.Get(a.Run)
	if known && r.Harness != u.name {
		return api.LogsSummary{}, errcode.Errorf(errcode.InvalidArgument, "run %d is a run of %s, not of %s", a.Run, r.Harness, u.name)
	}
	u.log.Flush()
	var after uint64
	if a.Cursor != nil {
		after = *a.Cursor
	}
	all, _ := u.log.EntriesAfter(after, 0)
	var mine []logs.Entry
	for _, e := range all {
		if e.RunID == a.Run {
			mine = append(mine, e)
		}
	}
	if len(mine) == 0 && !known && a.Cursor == nil {
		return api.LogsSummary{}, errcode.Errorf(errcode.InvalidArgument, "%s has no run %d in its history", u.name, a.Run)
	}
	lines := a.Lines
	if lines == 0 {
		lines = DefaultLines
	}
	res := api.LogsSummary{Format: "summary", Entries: []logs.Entry{}, NextCursor: after}
	if a.Cursor == nil {
		mine = tail(mine, lines)
	} else if len(mine) > lines {
		mine, res.Truncated = mine[:lines], true
	}
	size, fit := 0, 0
	for i := range mine {
		e := mine[i]
		if a.Cursor == nil { // keep the newest
			e = mine[len(mine)-1-i]
		}
		if size += entrySize(e); size > a.MaxBytes {
			break
		}
		fit++
	}
	if fit < len(mine) {
		res.Truncated = true
		if a.Cursor == nil {
			mine = mine[len(mine)-fit:]
		} else {
			mine = mine[:fit]
		}
	}
	if len(mine) > 0 {
		res.Entries = mine
		res.NextCursor = mine[len(mine)-1].ID
	} else if a.Cursor == nil {
		res.Note = fmt.Sprintf("no entries of run %d are retained", a.Run)
	}
	return res, nil
}

package calllog

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// Bounds of a query.
const (
	DefaultLimit = 100
	MaxLimit     = 10000
	MaxWait      = 60 * time.Second
)

// Query answers `calls`: the newest Limit matching records, or with a
// Cursor the oldest Limit matching records after it, waiting up to WaitS
// for one when there is none yet. Records come oldest first; every call
// recorded before Query began is in the answer (see Sync).
func (l *Log) Query(ctx context.Context, a api.CallsArgs) (api.CallsResult, error) {
	f, limit, wait, err := parseArgs(a)
	if err != nil {
		return api.CallsResult{}, err
	}
	l.Sync(ctx)
	if a.Cursor == nil {
		return l.newest(f, limit)
	}
	cursor := *a.Cursor
	deadline := time.Now().Add(wait)
	for {
		res, changed, err := l.after(f, cursor, limit)
		if err != nil || len(res.Calls) > 0 {
			return res, err
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return res, nil
		}
		cursor = res.NextCursor
		t := time.NewTimer(remaining)
		select {
		case <-changed:
			t.Stop()
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return res, nil // the caller has gone; nothing new to say
		}
	}
}

func parseArgs(a api.CallsArgs) (filter, int, time.Duration, error) {
	f := filter{harness: a.Harness, tool: a.Tool}
	if a.Tool != "" {
		if _, err := path.Match(a.Tool, ""); err != nil {
			return f, 0, 0, errcode.Errorf(errcode.InvalidArgument, "calls: tool glob %q: %v", a.Tool, err)
		}
	}
	if a.Since != nil {
		f.since, f.hasSince = *a.Since, true
	}
	limit := a.Limit
	switch {
	case limit == 0:
		limit = DefaultLimit
	case limit < 0 || limit > MaxLimit:
		return f, 0, 0, errcode.Errorf(errcode.InvalidArgument, "calls: limit %d: want 1 to %d", limit, MaxLimit)
	}
	wait := time.Duration(a.WaitS * float64(time.Second))
	switch {
	case a.WaitS < 0 || wait > MaxWait:
		return f, 0, 0, errcode.Errorf(errcode.InvalidArgument, "calls: wait_s %g: want 0 to %g", a.WaitS, MaxWait.Seconds())
	case wait > 0 && a.Cursor == nil:
		return f, 0, 0, errcode.Errorf(errcode.InvalidArgument, "calls: wait_s needs a cursor")
	}
	return f, limit, wait, nil
}

// filter is what a record must match.
type filter struct {
	harness, tool string
	since         time.Time
	hasSince      bool
}

func (f filter) match(r *api.CallRecord) bool {
	if f.harness != "" && r.Harness != f.harness {
		return false
	}
	if f.tool != "" {
		if ok, _ := path.Match(f.tool, r.Tool); !ok {
			return false
		}
	}
	return !f.hasSince || !r.Time.Before(f.since)
}

// newest answers a query without a cursor: from memory when the ring holds
// enough matches or everything, else from the files.
func (l *Log) newest(f filter, limit int) (api.CallsResult, error) {
	l.mu.Lock()
	last := l.lastID
	var got []api.CallRecord
	for i := l.ring.len() - 1; i >= 0 && len(got) < limit; i-- {
		if r := l.ring.at(i); f.match(r) {
			got = append(got, *r)
		}
	}
	complete := l.ring.base == 0
	l.mu.Unlock()
	if len(got) == limit || complete {
		reverse(got)
		return l.result(got, last), nil
	}
	keep := make([]api.CallRecord, 0, limit)
	start := 0 // keep is a circular buffer of the newest matches once full
	err := l.scan(func(r *api.CallRecord) bool {
		if !f.match(r) {
			return true
		}
		if len(keep) < limit {
			keep = append(keep, *r)
		} else {
			keep[start] = *r
			start = (start + 1) % limit
		}
		return true
	})
	got = append(keep[start:], keep[:start]...)
	if len(got) > 0 {
		last = max(last, got[len(got)-1].ID)
	}
	return l.result(got, last), err
}

// after answers a query with a cursor, and returns the channel that is
// closed at the next append after the answer was taken.
func (l *Log) after(f filter, cursor uint64, limit int) (api.CallsResult, <-chan struct{}, error) {
	l.mu.Lock()
	last, changed := l.lastID, l.changed
	// A cursor from the future (another log, a typo) means "from now on".
	cursor = min(cursor, last)
	if cursor >= l.ring.base {
		var got []api.CallRecord
		for i := l.ring.search(cursor); i < l.ring.len(); i++ {
			if r := l.ring.at(i); f.match(r) {
				got = append(got, *r)
				if len(got) == limit {
					last = r.ID
					break
				}
			}
		}
		l.mu.Unlock()
		return l.result(got, last), changed, nil
	}
	l.mu.Unlock()
	var got []api.CallRecord
	err := l.scan(func(r *api.CallRecord) bool {
		if r.ID > cursor && f.match(r) {
			got = append(got, *r)
		}
		return len(got) < limit
	})
	switch {
	case len(got) == limit:
		last = got[len(got)-1].ID
	case len(got) > 0:
		last = max(last, got[len(got)-1].ID)
	}
	return l.result(got, last), changed, err
}

func (l *Log) result(got []api.CallRecord, next uint64) api.CallsResult {
	if got == nil {
		got = []api.CallRecord{}
	}
	return api.CallsResult{Calls: got, NextCursor: next, Dropped: l.Dropped()}
}

// scan calls fn with every record in the files, oldest first, until fn
// returns false. Lines that do not decode (a write cut short) are skipped;
// so is a record seen twice because a rotation moved its file mid-scan.
func (l *Log) scan(fn func(*api.CallRecord) bool) error {
	var seen uint64
	for _, p := range l.files() {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return errcode.Errorf(errcode.Internal, "calls: read %s: %v", p, err)
		}
		goOn := true
		err = eachLine(f, func(line []byte) {
			if !goOn {
				return
			}
			var r api.CallRecord
			if json.Unmarshal(line, &r) != nil || r.ID <= seen {
				return
			}
			seen = r.ID
			goOn = fn(&r)
		})
		f.Close()
		if err != nil {
			return errcode.Errorf(errcode.Internal, "calls: read %s: %v", p, err)
		}
		if !goOn {
			return nil
		}
	}
	return nil
}

// maxLine bounds a line worth decoding: arguments are cut to argsBound,
// so a longer line is not a record this package wrote.
const maxLine = 1 << 20

// eachLine calls fn with every line of r up to maxLine bytes; longer lines
// are skipped whole.
func eachLine(r io.Reader, fn func([]byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	skipping := false
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if !skipping {
				long = append(long, chunk...)
				if len(long) > maxLine {
					long, skipping = long[:0], true
				}
			}
			continue
		case err != nil && !errors.Is(err, io.EOF):
			return err
		}
		if !skipping {
			line := chunk
			if len(long) > 0 {
				line = append(long, chunk...)
			}
			if len(line) > 0 {
				fn(line)
			}
		}
		long, skipping = long[:0], false
		if err != nil {
			return nil
		}
	}
}

func reverse(rs []api.CallRecord) {
	for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
		rs[i], rs[j] = rs[j], rs[i]
	}
}

// ring holds the newest records in id order, at most len(buf) of them and
// about maxBytes. Every record with an id above base is in it; base is the
// newest id on disk at Open, then the id of the last record pushed out.
type ring struct {
	buf      []api.CallRecord
	start    int // index of the oldest record
	n        int
	base     uint64
	bytes    int
	maxBytes int
}

func newRing(capacity, maxBytes int, base uint64) ring {
	return ring{buf: make([]api.CallRecord, capacity), maxBytes: maxBytes, base: base}
}

// recordSize estimates what a record holds in memory: its strings and
// arguments (the rest is the same for every record).
func recordSize(r *api.CallRecord) int {
	return 256 + len(r.Session) + len(r.Harness) + len(r.Project) + len(r.Tool) + len(r.Args)
}

func (r *ring) len() int { return r.n }

// at returns the i-th oldest record.
func (r *ring) at(i int) *api.CallRecord { return &r.buf[(r.start+i)%len(r.buf)] }

func (r *ring) push(rs []api.CallRecord) {
	for _, rec := range rs {
		size := recordSize(&rec)
		for r.n > 0 && (r.n == len(r.buf) || r.bytes+size > r.maxBytes) {
			r.pop()
		}
		r.buf[(r.start+r.n)%len(r.buf)] = rec
		r.n++
		r.bytes += size
	}
}

// pop forgets the oldest record.
func (r *ring) pop() {
	old := &r.buf[r.start]
	r.base, r.bytes = old.ID, r.bytes-recordSize(old)
	*old = api.CallRecord{} // let its strings go
	r.start = (r.start + 1) % len(r.buf)
	r.n--
}

// search returns the index of the first record with an id above id.
func (r *ring) search(id uint64) int {
	lo, hi := 0, r.n
	for lo < hi {
		mid := (lo + hi) / 2
		if r.at(mid).ID <= id {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

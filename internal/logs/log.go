// Package logs keeps the output of one unit (harness or upstream): a raw byte
// ring addressed by absolute offsets, mirrored to a size-rotated file, and an
// ordered log of activity entries (output lines with terminal control
// sequences removed, and lifecycle events) whose ids only grow, also across
// daemon restarts, so a poller's cursor stays valid.
//
// The PTY reader calls Write; readers (logs op, --follow, trigger --wait)
// copy out under a short lock and never make Write wait for them.
package logs

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logkey"
)

// Entry kinds.
const (
	KindOutput = api.EntryOutput // a line of the unit's output
	KindEvent  = api.EntryEvent  // a lifecycle event written by the supervisor
)

// Defaults for the zero fields of Options.
const (
	DefaultRingSize     = 256 << 10
	DefaultFileMaxBytes = 4 << 20
	DefaultFileBackups  = 2
	DefaultMaxEntries   = 2000
	DefaultMaxLineLen   = 4096
)

// Options bound a Log. A zero field takes its default; FileMaxBytes < 0
// disables the file mirror and FileBackups < 0 keeps no backups.
type Options struct {
	RingSize     int   // raw window in bytes; memory grows lazily up to it
	FileMaxBytes int64 // size at which the mirror file rotates
	FileBackups  int   // rotated files kept: <unit>.log.1 … .N
	MaxEntries   int   // entries kept in memory, oldest dropped
	MaxLineLen   int   // a longer line is emitted in pieces

	// OnEntry, when set, is called with every new entry, in id order, once
	// the entry is visible to readers. It runs on the writer's side with
	// the log's write lock held (that is what orders the calls), so it
	// must be cheap, must not block, and must not call back into the Log.
	OnEntry func(Entry)

	// Mask, when set, rewrites the text of every entry before anyone sees
	// it (secrets become "[masked]", docs/design/masking.md), so readers, OnEntry and
	// the trajectories it feeds never hold them. The raw ring and its
	// mirror file keep the program's bytes. It runs under the write lock.
	Mask func(string) string
}

func (o Options) withDefaults() Options {
	if o.RingSize <= 0 {
		o.RingSize = DefaultRingSize
	}
	if o.FileMaxBytes == 0 {
		o.FileMaxBytes = DefaultFileMaxBytes
	}
	if o.FileBackups == 0 {
		o.FileBackups = DefaultFileBackups
	} else if o.FileBackups < 0 {
		o.FileBackups = 0
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.MaxLineLen <= 0 {
		o.MaxLineLen = DefaultMaxLineLen
	}
	return o
}

// Entry is one activity entry; its wire shape is api.LogEntry.
type Entry = api.LogEntry

// aheadSlot lets one reserveAhead write at a time.
var aheadSlot = make(chan struct{}, 1)

// closedCh is what Changed returns after Close: followers wake and stop.
var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Log is the output of one unit. All methods are safe for concurrent use.
type Log struct {
	unit string
	opt  Options

	// wmu serialises the writing side (file, line parser, ids file), so
	// disk I/O happens outside mu and readers never wait for the disk.
	wmu    sync.Mutex
	asm    assembler
	file   *rotFile
	ids    idAlloc
	runID  uint64
	pend   []Entry // entries produced by the current call, ids not yet set
	err    error   // background failures (file mirror, ids file), also returned by Close
	closed bool
	// reserved is closed once Open's reservation of the first ids is
	// written (reserveAhead).
	reserved chan struct{}

	// mu guards what readers see; held only for short copies.
	mu      sync.Mutex
	ring    []byte // len == min(total, RingSize); offset o lives at o % RingSize
	total   int64  // bytes ever written since Open
	ents    []Entry
	head    int // index of the oldest entry once ents is full
	changed chan struct{}
}

// Open opens the log of unit under dir, creating dir (0700) and the mirror
// file (0600). unit may contain "/" (project/name); it is escaped for file
// names. Entry ids continue above every id a previous Log on the same dir
// and unit handed out, even if that one was never closed.
func Open(dir, unit string, opt Options) (*Log, error) {
	if unit == "" {
		return nil, errors.New("logs: open: empty unit name")
	}
	if dir == "" {
		return nil, fmt.Errorf("logs: open %s: empty directory", unit)
	}
	opt = opt.withDefaults()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("logs: open %s: %w", unit, err)
	}
	base := filepath.Join(dir, EscapeUnit(unit))
	ids, err := loadIDs(base + ".ids")
	if err != nil {
		return nil, fmt.Errorf("logs: open %s: %w", unit, err)
	}
	l := &Log{unit: unit, opt: opt, ids: ids, asm: assembler{max: opt.MaxLineLen}, reserved: make(chan struct{})}
	if opt.FileMaxBytes > 0 {
		l.file, err = openRotFile(base+".log", opt.FileMaxBytes, opt.FileBackups)
		if err != nil {
			return nil, fmt.Errorf("logs: open %s: %w", unit, err)
		}
	}
	go l.reserveAhead()
	return l, nil
}

// reserveAhead writes the ids file's first reservation in the background,
// so that the unit's first entry (the "spawned" event, on its actor, in
// the middle of a start --all of 1,000 units) finds its ids covered and
// waits for no disk. An entry made before it runs reserves them itself.
// One runs at a time (aheadSlot): a daemon opening 1,000 logs at boot
// answered its socket 0.5 s later with them all writing at once.
func (l *Log) reserveAhead() {
	defer close(l.reserved)
	aheadSlot <- struct{}{}
	defer func() { <-aheadSlot }()
	l.wmu.Lock() // Close waits for reserved, so the log is still open
	defer l.wmu.Unlock()
	if err := l.ids.reserve(1); err != nil {
		l.fail(fmt.Errorf("entry ids may repeat after a crash: %w", err))
		l.commit(nil)
	}
}

// Write takes raw output of the current run: it goes to the ring and the
// mirror file, and complete lines become "output" entries. It never waits
// for readers. A failing mirror file does not fail Write (the PTY must keep
// draining): the file is dropped, the failure is logged, recorded as an
// event entry and returned by Close.
func (l *Log) Write(p []byte) (int, error) { return l.write(p, true) }

// WriteRaw is Write without the line parser, for a unit whose output
// entries come from elsewhere (a terminal emulator, through Output).
func (l *Log) WriteRaw(p []byte) (int, error) { return l.write(p, false) }

func (l *Log) write(p []byte, lines bool) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return 0, fmt.Errorf("logs: %s: write: %w", l.unit, os.ErrClosed)
	}
	if l.file != nil {
		if err := l.file.write(p); err != nil {
			l.fail(fmt.Errorf("mirror file disabled: %w", errors.Join(err, l.file.close())))
			l.file = nil
		}
	}
	if lines {
		l.asm.write(p, l.addOutput)
	}
	l.commit(p)
	return len(p), nil
}

// Output appends "output" entries of the current run, one per line, in
// order. Control sequences are stripped, blank lines skipped and a long
// line is cut into pieces as Write would. Lines after Close are dropped.
func (l *Log) Output(lines ...string) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return
	}
	for _, s := range lines {
		s = strings.TrimRight(StripControl(s), " \t")
		for len(s) > l.opt.MaxLineLen {
			cut := l.opt.MaxLineLen
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			if cut == 0 {
				cut = l.opt.MaxLineLen
			}
			l.addOutput(s[:cut])
			s = s[cut:]
		}
		if strings.TrimSpace(s) != "" {
			l.addOutput(s)
		}
	}
	l.commit(nil)
}

// SetRun attributes output from now on to runID. A pending partial line is
// flushed first (it belongs to the previous run) and a half-read escape
// sequence is forgotten.
func (l *Log) SetRun(runID uint64) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return
	}
	l.asm.flush(l.addOutput)
	l.asm.reset()
	l.runID = runID
	l.commit(nil)
}

// Event appends a lifecycle entry, e.g. "spawned pid 42" or "exited with
// code 3", after flushing a pending partial line. Control sequences are
// stripped and line breaks become spaces. Events after Close are dropped.
func (l *Log) Event(runID uint64, text string) {
	text = StripControl(strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(text))
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return
	}
	l.asm.flush(l.addOutput)
	l.pend = append(l.pend, Entry{Kind: KindEvent, RunID: runID, Text: text})
	l.commit(nil)
}

// Flush turns a pending partial line into an entry.
func (l *Log) Flush() {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return
	}
	l.asm.flush(l.addOutput)
	l.commit(nil)
}

// Close flushes the pending line, closes the mirror file, records the exact
// id counter and wakes every Changed waiter. Reads keep working after Close;
// writes fail.
func (l *Log) Close() error {
	<-l.reserved // before wmu, which reserveAhead takes
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return nil
	}
	l.asm.flush(l.addOutput)
	l.commit(nil)
	l.closed = true
	errs := []error{l.err}
	if l.file != nil {
		errs = append(errs, l.file.close())
		l.file = nil
	}
	// Every id below next is used: the next Open may start right there,
	// unless a newer Log of the same unit (a unit removed and re-added by
	// reloads while it still stopped) reserved past it: ids never go back.
	next := l.ids.next
	if d := onDisk(l.ids.path); d != l.ids.ceil {
		next = max(next, d) // another Log of the unit wrote since our reservation
	}
	errs = append(errs, writeAtomic(l.ids.path, fmt.Appendf(nil, "%d\n", next)))
	l.mu.Lock()
	if l.changed != nil {
		close(l.changed)
	}
	l.changed = closedCh
	l.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("logs: %s: close: %w", l.unit, err)
	}
	return nil
}

// addOutput queues an output line of the current run. Called under wmu.
func (l *Log) addOutput(s string) {
	l.pend = append(l.pend, Entry{Kind: KindOutput, RunID: l.runID, Text: s})
}

// fail records a background failure once per cause. Called under wmu.
func (l *Log) fail(err error) {
	slog.Warn("logs: background failure", logkey.Unit, l.unit, logkey.Err, err)
	l.err = errors.Join(l.err, err)
	l.pend = append(l.pend, Entry{Kind: KindEvent, RunID: l.runID, Text: "log: " + StripControl(err.Error())})
}

// commit publishes raw bytes and the pending entries to readers. Called
// under wmu; the ids file is written before mu is taken.
func (l *Log) commit(raw []byte) {
	if len(l.pend) > 0 {
		if err := l.ids.reserve(len(l.pend)); err != nil {
			// reserve raised the ceiling with a block to spare, so the
			// event that fail queues still gets an id in this process.
			l.fail(fmt.Errorf("entry ids may repeat after a crash: %w", err))
		}
		now := time.Now()
		for i := range l.pend {
			l.pend[i].ID = l.ids.take()
			l.pend[i].Time = now
			if l.opt.Mask != nil {
				l.pend[i].Text = l.opt.Mask(l.pend[i].Text)
			}
		}
	}
	if len(raw) == 0 && len(l.pend) == 0 {
		return
	}
	l.mu.Lock()
	l.appendRing(raw)
	for _, e := range l.pend {
		l.appendEntry(e)
	}
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	l.mu.Unlock()
	if l.opt.OnEntry != nil {
		for _, e := range l.pend {
			l.opt.OnEntry(e)
		}
	}
	clear(l.pend)
	l.pend = l.pend[:0]
}

// appendRing copies p into the ring. Memory grows lazily: an idle unit
// holds only what it has written. Called under mu.
func (l *Log) appendRing(p []byte) {
	size := int64(l.opt.RingSize)
	off := l.total
	l.total += int64(len(p))
	if int64(len(p)) > size {
		off += int64(len(p)) - size
		p = p[int64(len(p))-size:]
	}
	if need := min(size, l.total); int64(len(l.ring)) < need {
		if int64(cap(l.ring)) < need {
			// A quarter more, not double: 1,000 TUI harnesses hold
			// their whole output, and doubling left up to half of
			// each ring unused (82 MiB of rings in all).
			c := min(size, max(need, int64(cap(l.ring))*5/4, 4096))
			grown := make([]byte, len(l.ring), c)
			copy(grown, l.ring)
			l.ring = grown
		}
		l.ring = l.ring[:need]
	}
	pos := off % size
	n := copy(l.ring[pos:], p)
	copy(l.ring, p[n:])
}

// appendEntry adds e, dropping the oldest entry when full. Called under mu.
func (l *Log) appendEntry(e Entry) {
	if len(l.ents) < l.opt.MaxEntries {
		l.ents = append(l.ents, e)
		return
	}
	l.ents[l.head] = e
	l.head = (l.head + 1) % len(l.ents)
}

// at returns the i-th oldest retained entry. Called under mu.
func (l *Log) at(i int) Entry {
	return l.ents[(l.head+i)%len(l.ents)]
}

// Raw returns the bytes from absolute offset from, clipped to the window
// [start, end) of retained bytes, at most max of them (max <= 0: no cap).
// from < start reads from start; from >= end returns no data. start and end
// let the caller tell which happened.
func (l *Log) Raw(from int64, max int) (data []byte, start, end int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	end = l.total
	start = end - int64(len(l.ring))
	from = min(end, maxInt64(from, start))
	n := end - from
	if max > 0 && n > int64(max) {
		n = int64(max)
	}
	data = make([]byte, n)
	pos := from % int64(l.opt.RingSize)
	k := copy(data, l.ring[pos:])
	copy(data[k:], l.ring)
	return data, start, end
}

func maxInt64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// EntriesAfter returns the retained entries with ID > after, oldest first:
// all of them, or the newest max when there are more (max <= 0: no cap).
// oldest is the ID of the oldest retained entry (0 when there is none), so
// a cursor below it has aged out.
func (l *Log) EntriesAfter(after uint64, max int) (entries []Entry, oldest uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.ents)
	if n == 0 {
		return nil, 0
	}
	i := sort.Search(n, func(i int) bool { return l.at(i).ID > after })
	if max > 0 && n-i > max {
		i = n - max
	}
	return l.copyFrom(i), l.at(0).ID
}

// Tail returns the last n entries, oldest first.
func (l *Log) Tail(n int) []Entry {
	if n <= 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.copyFrom(max(0, len(l.ents)-n))
}

// copyFrom copies the entries from logical index i on. Called under mu.
func (l *Log) copyFrom(i int) []Entry {
	if i >= len(l.ents) {
		return nil
	}
	out := make([]Entry, 0, len(l.ents)-i)
	for ; i < len(l.ents); i++ {
		out = append(out, l.at(i))
	}
	return out
}

// Changed returns a channel that is closed on the next append (raw bytes or
// an entry); call it again after it fires. After Close it is closed
// already. Check state after taking the channel, not before, or an append
// in between is missed.
func (l *Log) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed
}

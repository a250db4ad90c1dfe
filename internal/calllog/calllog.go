// Package calllog keeps the record of every MCP tools/call and prompts/get
// that goes through a session (docs/design/mcp.md): who called which tool,
// when, how it went and how long it took.
//
// Record is on the call path and never waits for the disk: it updates the
// in-memory stats and hands the record to a writer goroutine through a
// bounded queue; when the queue is full the record is dropped and counted.
// The writer appends JSON lines to <dir>/calls.jsonl, rotating it at
// MaxFileBytes into calls.1.jsonl … calls.N.jsonl (the oldest goes), so
// the log is bounded and survives daemon restarts. Record ids only grow,
// also across restarts, so a follower's cursor stays valid.
//
// Query reads the log back with filters: recent records from a ring in
// memory, older ones from the files. A query with a cursor can wait for the
// next matching record; the writer wakes it as soon as a record is on disk.
// The stats (calls, errors by code, latency quantiles since the start) feed
// `mcp status`, `daemon-info` and the Prometheus collector (metrics.go).
package calllog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logkey"
)

// Defaults for the zero fields of Options.
const (
	DefaultMaxFileBytes = 8 << 20 // a file is rotated past this size
	DefaultKeepFiles    = 3       // rotated files kept beside the current one
	DefaultQueue        = 4096    // records waiting for the writer
	DefaultRing         = 4096    // recent records answered from memory
	DefaultRingBytes    = 4 << 20 // and at most about this many bytes of them
)

// maxQueuedArgs bounds the argument bytes waiting for the writer: past it a
// record is queued with a note instead of its arguments, so a slow disk
// never pins clients' requests in memory.
const maxQueuedArgs = 16 << 20

// Log keys.
const (
	keyErr     = "error"
	keyDir     = "dir"
	keyDropped = "dropped"
)

// CurrentFile is the name of the file being appended to in the log's dir.
const CurrentFile = "calls.jsonl"

// Options configure Open. A zero field takes its default.
type Options struct {
	MaxFileBytes int64
	KeepFiles    int // rotated files kept; negative keeps none
	Queue        int
	Ring         int
	RingBytes    int
	Logger       *slog.Logger
	// Mask, when set, rewrites every kept argument string (and object
	// key) before it is stored or answered (docs/design/masking.md: secrets become
	// "[masked]"). It runs on the writer goroutine.
	Mask func(string) string
}

func (o Options) withDefaults() Options {
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	switch {
	case o.KeepFiles == 0:
		o.KeepFiles = DefaultKeepFiles
	case o.KeepFiles < 0:
		o.KeepFiles = 0
	}
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	if o.Ring <= 0 {
		o.Ring = DefaultRing
	}
	if o.RingBytes <= 0 {
		o.RingBytes = DefaultRingBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Log is the call log of one daemon. Its methods are safe for concurrent use.
type Log struct {
	dir   string
	opt   Options
	log   *slog.Logger
	stats stats

	queue    chan api.CallRecord
	syncReq  chan chan struct{} // Sync asks the writer to write now
	done     chan struct{}      // closed by Close
	exited   chan struct{}      // closed when the writer has returned
	closed   atomic.Bool
	keepArgs atomic.Bool
	dropped  atomic.Uint64
	written  atomic.Uint64
	argBytes atomic.Int64 // argument bytes in the queue

	// Owned by the writer goroutine.
	w        writer
	closeErr error

	// mu guards the records a query can see without reading the files.
	mu      sync.Mutex
	ring    ring
	lastID  uint64        // newest id on disk
	changed chan struct{} // closed at the next append
}

// Open opens (creating, 0700) the log under dir and starts its writer. The
// next id follows the newest one already on disk.
func Open(dir string, opt Options) (*Log, error) {
	return open(dir, opt, nil)
}

// open is Open with the file writes passed through wrap (tests slow the
// disk down with it).
func open(dir string, opt Options, wrap func(io.Writer) io.Writer) (*Log, error) {
	if dir == "" {
		return nil, errors.New("calllog: open: empty directory")
	}
	opt = opt.withDefaults()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("calllog: open: %w", err)
	}
	l := &Log{
		dir: dir, opt: opt, log: opt.Logger.With(logkey.Component, "calllog"),
		stats:   newStats(),
		queue:   make(chan api.CallRecord, opt.Queue),
		syncReq: make(chan chan struct{}),
		done:    make(chan struct{}),
		exited:  make(chan struct{}),
		changed: make(chan struct{}),
	}
	last, err := lastIDOnDisk(l.files())
	if err != nil {
		return nil, fmt.Errorf("calllog: open: %w", err)
	}
	l.lastID = last
	l.ring = newRing(opt.Ring, opt.RingBytes, last)
	l.w = writer{dir: dir, maxBytes: opt.MaxFileBytes, keep: opt.KeepFiles, wrap: wrap, mask: opt.Mask, nextID: last}
	if err := l.w.open(); err != nil {
		return nil, fmt.Errorf("calllog: open: %w", err)
	}
	go l.run()
	return l, nil
}

// Dir is the directory of the log files.
func (l *Log) Dir() string { return l.dir }

// SetKeepArgs turns the keeping of argument values on or off
// ([daemon] call_log_args); it applies to records made from now on.
func (l *Log) SetKeepArgs(on bool) { l.keepArgs.Store(on) }

// KeepArgs reports whether argument values are kept, so a session builds
// them only when they will be stored.
func (l *Log) KeepArgs() bool { return l.keepArgs.Load() }

// Dropped counts records lost since Open: the writer was behind (the queue
// was full) or the disk refused them.
func (l *Log) Dropped() uint64 { return l.dropped.Load() }

// Written counts records on disk since Open.
func (l *Log) Written() uint64 { return l.written.Load() }

// toolNameBound caps a recorded tool name: a client may call any name.
const toolNameBound = 256

// Record counts r in the stats and queues it for the writer. It never
// blocks: when the writer is behind, r is dropped and counted. r.ID is
// assigned by the writer; r.Args is kept only while KeepArgs is on.
func (l *Log) Record(r api.CallRecord) {
	if len(r.Tool) > toolNameBound {
		r.Tool = strings.Clone(cutString(r.Tool, toolNameBound))
	}
	l.stats.add(&r)
	if !l.keepArgs.Load() {
		r.Args = nil
	}
	if n := int64(len(r.Args)); n > 0 && l.argBytes.Add(n) > maxQueuedArgs {
		// A note instead, counted like arguments so that taken balances.
		r.Args = note(fmt.Sprintf("arguments of %d bytes not kept: the writer is behind", n))
		l.argBytes.Add(int64(len(r.Args)) - n)
	}
	if l.closed.Load() {
		l.taken(r)
		l.dropped.Add(1)
		return
	}
	select {
	case l.queue <- r:
	default:
		l.taken(r)
		if l.dropped.Add(1) == 1 {
			l.log.Warn("call log writer is behind; dropping records (counted in dropped)", keyDir, l.dir)
		}
	}
}

// Close writes what is queued, closes the file and stops the writer.
// Records made after Close are dropped.
func (l *Log) Close() error {
	if !l.closed.CompareAndSwap(false, true) {
		<-l.exited
		return nil
	}
	close(l.done)
	<-l.exited
	return l.closeErr
}

// Changed returns a channel closed at the next append.
func (l *Log) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// batchMax bounds the records written with one write call.
const batchMax = 256

// gatherFor is how long the writer lets a burst of calls gather before it
// writes: one write (and one wake-up of the writer) per burst rather than
// per call keeps the log's CPU off the calls' cores. Followers see a call
// this much later at most.
const gatherFor = 20 * time.Millisecond

// run is the writer goroutine: it takes what is queued, writes it with one
// write call and publishes it to queries.
func (l *Log) run() {
	defer close(l.exited)
	batch := make([]api.CallRecord, 0, batchMax)
	gather := time.NewTimer(gatherFor)
	gather.Stop()
	var synced []chan struct{}
	for {
		batch, synced = batch[:0], synced[:0]
		select {
		case r := <-l.queue:
			batch = append(batch, l.taken(r))
		case s := <-l.syncReq:
			synced = append(synced, s)
		case <-l.done:
			l.drain(batch)
			return
		}
		if batch = l.take(batch); len(batch) < batchMax && len(synced) == 0 {
			// While the writer sleeps, Record's sends wake nobody.
			gather.Reset(gatherFor)
			select {
			case <-gather.C:
			case s := <-l.syncReq:
				synced = append(synced, s)
				gather.Stop()
			case <-l.done:
				gather.Stop()
			}
			batch = l.take(batch)
		}
		if len(batch) > 0 {
			l.publish(l.w.write(batch, l.onLost))
		}
		for _, s := range synced {
			close(s)
		}
	}
}

// syncWait bounds how long a query waits for the writer (a slow disk).
const syncWait = time.Second

// Sync has the writer write what is queued now, without waiting out its
// gathering, and waits until it has (at most syncWait, or until ctx
// ends): a query then sees every call answered before it began.
func (l *Log) Sync(ctx context.Context) {
	done := make(chan struct{})
	t := time.NewTimer(syncWait)
	defer t.Stop()
	select {
	case l.syncReq <- done:
	case <-l.exited:
		return
	case <-ctx.Done():
		return
	case <-t.C:
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	case <-t.C:
	}
}

// take adds what is queued to batch, up to batchMax, without waiting.
func (l *Log) take(batch []api.CallRecord) []api.CallRecord {
	for len(batch) < batchMax {
		select {
		case r := <-l.queue:
			batch = append(batch, l.taken(r))
		default:
			return batch
		}
	}
	return batch
}

// taken notes that r has left the queue (or never entered it).
func (l *Log) taken(r api.CallRecord) api.CallRecord {
	if n := int64(len(r.Args)); n > 0 {
		l.argBytes.Add(-n)
	}
	return r
}

// drain writes everything still queued at Close, then closes the file.
func (l *Log) drain(batch []api.CallRecord) {
	for {
		select {
		case r := <-l.queue:
			batch = append(batch, l.taken(r))
			if len(batch) < batchMax {
				continue
			}
		default:
		}
		if len(batch) == 0 {
			break
		}
		l.publish(l.w.write(batch, l.onLost))
		batch = batch[:0]
	}
	l.closeErr = l.w.close()
}

// onLost counts records the writer could not put on disk.
func (l *Log) onLost(n int, err error) {
	l.dropped.Add(uint64(n))
	l.log.Error("call log write failed; records dropped", keyDir, l.dir, keyDropped, n, keyErr, err)
}

// publish makes written records visible to queries and wakes followers.
func (l *Log) publish(written []api.CallRecord) {
	if len(written) == 0 {
		return
	}
	l.written.Add(uint64(len(written)))
	l.mu.Lock()
	l.ring.push(written)
	l.lastID = written[len(written)-1].ID
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// files are the log's files, oldest first.
func (l *Log) files() []string {
	out := make([]string, 0, l.opt.KeepFiles+1)
	for i := l.opt.KeepFiles; i >= 1; i-- {
		out = append(out, filepath.Join(l.dir, rotatedName(i)))
	}
	return append(out, filepath.Join(l.dir, CurrentFile))
}

func rotatedName(i int) string { return fmt.Sprintf("calls.%d.jsonl", i) }

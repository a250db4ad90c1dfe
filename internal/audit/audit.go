// Package audit keeps the audit log: one JSON line per state-changing
// operation, from whichever door it came (docs/operations.md), in
// STATE/audit.jsonl.
//
// Record is on the operation's path and never waits for the disk: it
// hands the entry to a writer goroutine through a bounded queue; when the
// queue is full the entry is dropped, counted and logged. The writer
// appends to audit.jsonl and rotates it at MaxFileBytes into
// audit.1.jsonl … audit.N.jsonl (the oldest goes), as the call log does,
// so the log is bounded and survives daemon restarts.
package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logkey"
)

// File is the name of the file being appended to in the state dir.
const File = "audit.jsonl"

// Defaults for the zero fields of Options.
const (
	DefaultMaxFileBytes = 4 << 20 // a file is rotated past this size
	DefaultKeepFiles    = 3       // rotated files kept beside the current one
	DefaultQueue        = 1024    // entries waiting for the writer
)

// Options configure Open. A zero field takes its default.
type Options struct {
	MaxFileBytes int64
	KeepFiles    int
	Queue        int
	Logger       *slog.Logger
}

// Log is an open audit log.
type Log struct {
	dir     string
	opt     Options
	log     *slog.Logger
	q       chan api.AuditEntry
	sync    chan chan struct{}
	stop    chan struct{}
	done    chan struct{}
	dropped atomic.Uint64
	closed  atomic.Bool
	// mu keeps a reader off the files while the writer rotates them.
	mu   sync.Mutex
	f    *os.File
	size int64
}

// Open opens (creating) dir/audit.jsonl and starts the writer.
func Open(dir string, o Options) (*Log, error) {
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.KeepFiles <= 0 {
		o.KeepFiles = DefaultKeepFiles
	}
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	l := &Log{
		dir: dir, opt: o, log: o.Logger,
		q:    make(chan api.AuditEntry, o.Queue),
		sync: make(chan chan struct{}),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	if err := l.open(); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	go l.run()
	return l, nil
}

func (l *Log) open() error {
	f, err := os.OpenFile(filepath.Join(l.dir, File), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// Record queues e for the writer; it never blocks. A full queue drops e,
// counted (Dropped) and logged.
func (l *Log) Record(e api.AuditEntry) {
	if l == nil || l.closed.Load() {
		return
	}
	select {
	case l.q <- e:
	default:
		n := l.dropped.Add(1)
		l.log.Warn("audit entry dropped: the writer is behind", logkey.Op, e.Op, logkey.Count, n)
	}
}

// Dropped counts the entries not written since Open.
func (l *Log) Dropped() uint64 {
	if l == nil {
		return 0
	}
	return l.dropped.Load()
}

// run is the writer goroutine.
func (l *Log) run() {
	defer close(l.done)
	for {
		select {
		case e := <-l.q:
			l.write(e)
		case ack := <-l.sync:
			l.drain()
			close(ack)
		case <-l.stop:
			l.drain()
			return
		}
	}
}

// drain writes what is queued now.
func (l *Log) drain() {
	for {
		select {
		case e := <-l.q:
			l.write(e)
		default:
			return
		}
	}
}

func (l *Log) write(e api.AuditEntry) {
	line, err := json.Marshal(e)
	if err != nil {
		l.lost(e, err)
		return
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.size > 0 && l.size+int64(len(line)) > l.opt.MaxFileBytes {
		if err := l.rotate(); err != nil {
			l.log.Error("audit log not rotated", logkey.Err, err)
		}
	}
	if l.f == nil {
		l.lost(e, errors.New("no file open"))
		return
	}
	n, err := l.f.Write(line)
	l.size += int64(n)
	if err != nil {
		l.lost(e, err)
	}
}

func (l *Log) lost(e api.AuditEntry, err error) {
	n := l.dropped.Add(1)
	l.log.Error("audit entry not written", logkey.Op, e.Op, logkey.Count, n, logkey.Err, err)
}

// rotate shifts audit.N.jsonl up by one (the oldest goes) and starts a new
// audit.jsonl. Caller holds mu.
func (l *Log) rotate() error {
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
	for i := l.opt.KeepFiles - 1; i >= 1; i-- {
		if err := os.Rename(l.rotated(i), l.rotated(i+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := os.Rename(filepath.Join(l.dir, File), l.rotated(1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return l.open()
}

func (l *Log) rotated(i int) string {
	return filepath.Join(l.dir, fmt.Sprintf("audit.%d.jsonl", i))
}

// Sync returns once every entry recorded before it was called is written.
func (l *Log) Sync() {
	if l == nil || l.closed.Load() {
		return
	}
	ack := make(chan struct{})
	select {
	case l.sync <- ack:
		<-ack
	case <-l.done:
	}
}

// Read answers the entries at or after since (zero: all kept), oldest
// first, once what was recorded before the call is written. A line that
// does not decode (a write cut short) is skipped.
func (l *Log) Read(since time.Time) ([]api.AuditEntry, error) {
	l.Sync()
	l.mu.Lock()
	defer l.mu.Unlock()
	out := []api.AuditEntry{}
	files := []string{}
	for i := l.opt.KeepFiles; i >= 1; i-- {
		files = append(files, l.rotated(i))
	}
	files = append(files, filepath.Join(l.dir, File))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			var e api.AuditEntry
			if json.Unmarshal(sc.Bytes(), &e) != nil || e.Time.Before(since) {
				continue
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// Close writes what is queued and closes the file.
func (l *Log) Close() error {
	if l == nil || !l.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/harness-dev/harness/internal/logkey"
)

// The history file is written by one writer goroutine, never by the
// caller: Begin, SetPID and End run on a unit's actor, which must not wait
// for a disk (a slow one, a full one, a compaction's fsync). They change
// memory, queue the encoded record and wake the writer, which appends what
// is queued in one write and compacts when the file has grown. Memory is
// the truth: when a write fails (the disk is full, say) the queue is
// dropped and the next successful write rewrites the whole file from
// memory, retried with a backoff and on every new record, so nothing the
// store still holds is lost and the queue never grows without bound.

const (
	// maxPending bounds the records queued for the writer; past it the
	// queue is dropped for a rewrite from memory.
	maxPending = 4096
	// retryMin and retryMax bound the backoff of a failing writer.
	retryMin = 250 * time.Millisecond
	retryMax = 30 * time.Second
)

// writer is the state of the writer goroutine. pending, rewrite, failures
// and lastErr are guarded by Store.mu; f is the writer's alone once Open
// returned.
type writer struct {
	wrap     func(io.Writer) io.Writer // tests: a slow or failing disk
	pending  [][]byte                  // encoded records, in order, not yet written
	rewrite  bool                      // rewrite the whole file from memory next
	failures int                       // failed writes since Open
	lastErr  error                     // the last write's failure; nil once one succeeds

	kick  chan struct{}      // cap 1: something is queued
	flush chan chan struct{} // write what is queued, then close the reply
	stop  chan struct{}
	done  chan struct{}
}

// persist queues the full record of run for the writer. Called under mu;
// it never waits for the disk.
func (s *Store) persist(run Run) error {
	b, err := json.Marshal(run)
	if err != nil {
		return fmt.Errorf("encode run %d: %w", run.ID, err)
	}
	if len(s.w.pending) >= maxPending {
		s.w.pending, s.w.rewrite = nil, true
	}
	if !s.w.rewrite {
		s.w.pending = append(s.w.pending, append(b, '\n'))
	}
	select {
	case s.w.kick <- struct{}{}:
	default:
	}
	return nil
}

// startWriter starts the writer goroutine; Close stops it.
func (s *Store) startWriter() {
	s.w.kick = make(chan struct{}, 1)
	s.w.flush = make(chan chan struct{})
	s.w.stop = make(chan struct{})
	s.w.done = make(chan struct{})
	go s.writeLoop()
}

func (s *Store) writeLoop() {
	defer close(s.w.done)
	var retry <-chan time.Time
	delay := retryMin
	for {
		var reply chan struct{}
		select {
		case <-s.w.kick:
		case <-retry:
		case reply = <-s.w.flush:
		case <-s.w.stop:
			s.writeOnce()
			return
		}
		if s.writeOnce() {
			retry, delay = nil, retryMin
		} else if retry == nil {
			retry = time.After(delay)
			delay = min(2*delay, retryMax)
		}
		if reply != nil {
			close(reply)
		}
	}
}

// writeOnce writes what is queued (or rewrites the file) and reports
// whether the file now holds everything queued so far.
func (s *Store) writeOnce() bool {
	s.mu.Lock()
	batch := s.w.pending
	s.w.pending = nil
	full := s.w.rewrite || s.lines+len(batch) > s.compactAt()
	var all []byte
	var n int
	var err error
	if full {
		s.w.rewrite = false
		all, n, err = s.encodeAll()
	}
	s.mu.Unlock()
	if err == nil {
		switch {
		case full:
			err = s.replaceFile(all)
		case len(batch) > 0:
			err = s.appendFile(bytes.Join(batch, nil))
		default:
			return true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		// Memory holds every record: the next write rewrites the file.
		s.w.rewrite = true
		s.w.failures++
		if s.w.lastErr == nil {
			slog.Warn("runs: writing the history failed; retrying", logkey.File, s.path, logkey.Err, err)
		}
		s.w.lastErr = err
		return false
	}
	if s.w.lastErr != nil {
		slog.Info("runs: the history is written again", logkey.File, s.path)
		s.w.lastErr = nil
	}
	if full {
		s.lines = n
	} else {
		s.lines += len(batch)
	}
	return true
}

// Flush returns once the writer has tried to write everything queued
// before the call (whether it succeeded is WriteFailures' business).
func (s *Store) Flush() {
	reply := make(chan struct{})
	select {
	case s.w.flush <- reply:
		<-reply
	case <-s.w.done:
	}
}

// WriteFailures counts the failed writes of the history since Open; a
// write is retried until it succeeds, so a non-zero count says the disk
// refused at some point, not that records are lost.
func (s *Store) WriteFailures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.failures
}

// WriteError is the last write's failure, nil once a write succeeded.
func (s *Store) WriteError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.lastErr
}

// Path is the history file.
func (s *Store) Path() string { return s.path }

// appendFile appends records. Only the writer (or Open) calls it.
func (s *Store) appendFile(buf []byte) error {
	if s.f == nil {
		// A reopen after a rewrite failed earlier: try again.
		f, err := os.OpenFile(s.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("history file is not open: %w", err)
		}
		s.f = f
	}
	var w io.Writer = s.f
	if s.w.wrap != nil {
		w = s.w.wrap(s.f)
	}
	if n, err := w.Write(buf); err != nil {
		if n > 0 {
			// A torn line would swallow the next record on load: cut it.
			if off, serr := s.f.Seek(0, io.SeekEnd); serr == nil {
				_ = s.f.Truncate(off - int64(n)) // best effort; load skips a torn line anyway
			}
		}
		return fmt.Errorf("append: %w", err)
	}
	return nil
}

// isClosed reports whether Close has run.
func (s *Store) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// encodeAll is the file's content with one record per retained run, and
// how many records that is. Called under mu.
func (s *Store) encodeAll() ([]byte, int, error) {
	ids := make([]uint64, 0, len(s.runs))
	for id := range s.runs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var buf []byte
	for _, id := range ids {
		b, err := json.Marshal(s.runs[id])
		if err != nil {
			return nil, 0, fmt.Errorf("compact: encode run %d: %w", id, err)
		}
		buf = append(append(buf, b...), '\n')
	}
	return buf, len(ids), nil
}

// compact rewrites the file from memory. Only Open calls it, before the
// writer starts.
func (s *Store) compact() error {
	buf, n, err := s.encodeAll()
	if err != nil {
		return err
	}
	if err := s.replaceFile(buf); err != nil {
		return err
	}
	s.lines = n
	return nil
}

// replaceFile writes buf through a synced temp file and a rename, so a
// crash leaves the old or the new file, never a mix, and reopens it for
// appends. Only the writer (or Open) calls it.
func (s *Store) replaceFile(buf []byte) error {
	dir, base := filepath.Split(s.path)
	tmp, err := os.CreateTemp(dir, base+".tmp-*") // mode 0600
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	var w io.Writer = tmp
	if s.w.wrap != nil {
		w = s.w.wrap(tmp)
	}
	_, err = w.Write(buf)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.path)
	}
	if err != nil {
		if rerr := os.Remove(tmp.Name()); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
		return fmt.Errorf("compact: %w", err)
	}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		// The old handle now points at the replaced file: appending to it
		// would lose records silently, so reopen at the next write.
		if s.f != nil {
			err = errors.Join(err, s.f.Close())
			s.f = nil
		}
		return fmt.Errorf("compact: reopen: %w", err)
	}
	if s.f != nil {
		if err := s.f.Close(); err != nil {
			slog.Warn("runs: closing the replaced history file", logkey.File, s.path, logkey.Err, err)
		}
	}
	s.f = f
	return nil
}

package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/harness-dev/harness/internal/logkey"
)

// persist appends the full record of run. Called under mu. A failed
// compaction afterwards is not the caller's failure (its change is on
// disk): it is logged and returned by Close.
func (s *Store) persist(run Run) error {
	if s.f == nil && !s.isClosed() {
		// A reopen after compaction failed earlier (the disk was full, say):
		// try again rather than fail every spawn until a restart.
		f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("history file is not open: %w", err)
		}
		s.f = f
	}
	if s.f == nil {
		return errors.New("history file is not open")
	}
	b, err := json.Marshal(run)
	if err != nil {
		return fmt.Errorf("encode run %d: %w", run.ID, err)
	}
	if n, err := s.f.Write(append(b, '\n')); err != nil {
		if n > 0 {
			// A torn line would swallow the next record on load: cut it.
			if off, serr := s.f.Seek(0, io.SeekEnd); serr == nil {
				_ = s.f.Truncate(off - int64(n)) // best effort; load skips a torn line anyway
			}
		}
		return fmt.Errorf("append run %d: %w", run.ID, err)
	}
	s.lines++
	if s.lines > s.compactAt() {
		if err := s.compact(); err != nil {
			slog.Warn("runs: compaction failed", logkey.File, s.path, logkey.Err, err)
			s.err = errors.Join(s.err, err)
		}
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

// compact rewrites the file with one record per retained run through a
// synced temp file and a rename, so a crash leaves the old or the new file,
// never a mix. Called under mu (or from Open).
func (s *Store) compact() error {
	ids := make([]uint64, 0, len(s.runs))
	for id := range s.runs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var buf []byte
	for _, id := range ids {
		b, err := json.Marshal(s.runs[id])
		if err != nil {
			return fmt.Errorf("compact: encode run %d: %w", id, err)
		}
		buf = append(append(buf, b...), '\n')
	}
	dir, base := filepath.Split(s.path)
	tmp, err := os.CreateTemp(dir, base+".tmp-*") // mode 0600
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	_, err = tmp.Write(buf)
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
		// would lose records silently, so persist must fail from now on.
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
	s.lines = len(ids)
	return nil
}

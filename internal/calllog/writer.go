package calllog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/harness-dev/harness/internal/api"
)

// writer appends records to the current file and rotates it. It belongs to
// the Log's writer goroutine.
type writer struct {
	dir      string
	maxBytes int64
	keep     int
	wrap     func(io.Writer) io.Writer
	mask     func(string) string // Options.Mask
	nextID   uint64              // last id given out

	f      *os.File
	out    io.Writer // f, or what wrap made of it
	size   int64
	broken bool // the file does not end with a newline (a write stopped part-way)

	buf    []byte
	ends   []int            // end offset in buf of each buffered record
	ondisk []api.CallRecord // what the current write call put on disk
}

// open opens the current file for appending (0600), noting whether its
// last line is complete.
func (w *writer) open() error {
	f, err := os.OpenFile(filepath.Join(w.dir, CurrentFile), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	w.size, w.broken = fi.Size(), false
	if w.size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, w.size-1); err != nil {
			f.Close()
			return err
		}
		w.broken = last[0] != '\n'
	}
	w.f, w.out = f, io.Writer(f)
	if w.wrap != nil {
		w.out = w.wrap(f)
	}
	return nil
}

// write gives recs their ids, encodes them and appends them, rotating the
// file when the next line would take it past maxBytes. It returns the
// records now on disk (valid until the next call); lost hears of the rest.
func (w *writer) write(recs []api.CallRecord, lost func(int, error)) []api.CallRecord {
	w.ondisk = w.ondisk[:0]
	enc := recs[:0] // encoded records, compacted in place
	from := 0       // enc[from:] are buffered, not yet written
	for i := range recs {
		r := recs[i]
		r.ID = w.nextID + 1
		r.Args = cutArgs(r.Args, w.mask)
		line, err := json.Marshal(&r)
		if err != nil {
			lost(1, fmt.Errorf("encode record: %w", err))
			continue
		}
		w.nextID++
		if pending := w.size + int64(len(w.buf)); pending > 0 && pending+int64(len(line))+1 > w.maxBytes {
			w.flush(enc[from:], lost)
			from = len(enc)
			if err := w.rotate(); err != nil {
				// The next flush reopens (or counts its records lost).
				lost(0, fmt.Errorf("rotate: %w", err))
			}
		}
		w.buf = append(append(w.buf, line...), '\n')
		w.ends = append(w.ends, len(w.buf))
		enc = append(enc, r)
	}
	w.flush(enc[from:], lost)
	return w.ondisk
}

// flush writes the buffered lines of rs with one write call.
func (w *writer) flush(rs []api.CallRecord, lost func(int, error)) {
	defer func() { w.buf, w.ends = w.buf[:0], w.ends[:0] }()
	if len(rs) == 0 {
		return
	}
	if w.f == nil {
		if err := w.open(); err != nil {
			lost(len(rs), fmt.Errorf("open: %w", err))
			return
		}
	}
	if w.broken {
		// A partial line stays a line of its own, skipped by readers.
		if _, err := w.out.Write([]byte{'\n'}); err != nil {
			lost(len(rs), fmt.Errorf("write: %w", err))
			return
		}
		w.size++
		w.broken = false
	}
	n, err := w.out.Write(w.buf)
	w.size += int64(n)
	if err == nil && n < len(w.buf) {
		err = io.ErrShortWrite
	}
	whole := len(rs)
	if err != nil {
		whole = 0
		for whole < len(w.ends) && w.ends[whole] <= n {
			whole++
		}
		w.broken = n > 0 && w.buf[n-1] != '\n'
		lost(len(rs)-whole, fmt.Errorf("write: %w", err))
	}
	w.ondisk = append(w.ondisk, rs[:whole]...)
}

// rotate moves the current file to calls.1.jsonl (calls.i to calls.i+1,
// the oldest dropped) and opens a new current file.
func (w *writer) rotate() error {
	var errs []error
	if w.f != nil {
		errs = append(errs, w.f.Close())
		w.f, w.out = nil, nil
	}
	cur := filepath.Join(w.dir, CurrentFile)
	if w.keep == 0 {
		errs = append(errs, ignoreMissing(os.Remove(cur)))
	} else {
		errs = append(errs, ignoreMissing(os.Remove(filepath.Join(w.dir, rotatedName(w.keep)))))
		for i := w.keep - 1; i >= 1; i-- {
			errs = append(errs, ignoreMissing(os.Rename(filepath.Join(w.dir, rotatedName(i)), filepath.Join(w.dir, rotatedName(i+1)))))
		}
		errs = append(errs, os.Rename(cur, filepath.Join(w.dir, rotatedName(1))))
	}
	errs = append(errs, w.open())
	return errors.Join(errs...)
}

func (w *writer) close() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f, w.out = nil, nil
	if err != nil {
		return fmt.Errorf("calllog: close: %w", err)
	}
	return nil
}

func ignoreMissing(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// tailBytes is how much of a file's end is read for its newest id.
const tailBytes = 1 << 20

// lastIDOnDisk is the newest record id in files (oldest first), 0 when
// there is none.
func lastIDOnDisk(files []string) (uint64, error) {
	for i := len(files) - 1; i >= 0; i-- {
		id, err := lastIDOf(files[i])
		if err != nil {
			return 0, err
		}
		if id > 0 {
			return id, nil
		}
	}
	return 0, nil
}

// lastIDOf reads the id of the last whole record of one file, scanning the
// whole file when its tail holds none.
func lastIDOf(path string) (uint64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	off := max(0, fi.Size()-tailBytes)
	tail := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(tail, off); err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	lines := bytes.Split(tail, []byte{'\n'})
	for i := len(lines) - 1; i >= 0; i-- {
		if id, ok := idOf(lines[i]); ok {
			return id, nil
		}
	}
	if off == 0 {
		return 0, nil
	}
	var newest uint64
	err = eachLine(f, func(line []byte) {
		if id, ok := idOf(line); ok {
			newest = max(newest, id)
		}
	})
	return newest, err
}

func idOf(line []byte) (uint64, bool) {
	var r struct {
		ID uint64 `json:"id"`
	}
	if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &r) != nil || r.ID == 0 {
		return 0, false
	}
	return r.ID, true
}

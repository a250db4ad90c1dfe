package logs

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/logkey"
)

// EscapeUnit maps a unit name ("project/name", or anything else) to a single
// file name component. Every byte outside [A-Za-z0-9_-] becomes %XX, which
// makes the mapping injective ('%' itself is escaped) and keeps "/" and
// leading dots out of file names. Every per-unit file of the state dir is
// named with it.
func EscapeUnit(unit string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(unit); i++ {
		c := unit[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// rotFile mirrors raw output to path, rotating to path.1 … path.N by size.
type rotFile struct {
	path    string
	max     int64
	backups int
	f       *os.File
	size    int64
}

func openRotFile(path string, max int64, backups int) (*rotFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("stat log file: %w", err), f.Close())
	}
	return &rotFile{path: path, max: max, backups: backups, f: f, size: st.Size()}, nil
}

// write appends p, rotating whenever the current file is full, so no file
// grows past max even when p is larger than max.
func (r *rotFile) write(p []byte) error {
	for len(p) > 0 {
		room := r.max - r.size
		if room <= 0 {
			if err := r.rotate(); err != nil {
				return err
			}
			room = r.max
		}
		n := int(min(room, int64(len(p))))
		w, err := r.f.Write(p[:n])
		r.size += int64(w)
		if err != nil {
			return fmt.Errorf("write log file: %w", err)
		}
		p = p[n:]
	}
	return nil
}

func (r *rotFile) backup(k int) string {
	if k == 0 {
		return r.path
	}
	return r.path + "." + strconv.Itoa(k)
}

// rotate shifts path.k to path.k+1 (the oldest is overwritten) and starts
// an empty path.
func (r *rotFile) rotate() error {
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("rotate: close: %w", err)
	}
	r.f = nil
	for k := r.backups; k >= 1; k-- {
		err := os.Rename(r.backup(k-1), r.backup(k))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rotate: %w", err)
		}
	}
	f, err := os.OpenFile(r.path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("rotate: reopen: %w", err)
	}
	r.f, r.size = f, 0
	return nil
}

func (r *rotFile) close() error {
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	if err != nil {
		return fmt.Errorf("close log file: %w", err)
	}
	return nil
}

// idBlock is how many entry ids are reserved per write of the ids file.
const idBlock = 1024

// idAlloc hands out entry ids that only grow, also across processes. The
// file holds a ceiling: every id handed out so far is below it. Ids are
// reserved a block at a time, so a crash (no Close) wastes at most a block
// and there is no file write per line.
type idAlloc struct {
	path string
	next uint64 // the next id to hand out
	ceil uint64 // ids < ceil are covered by the file
}

func loadIDs(path string) (idAlloc, error) {
	a := idAlloc{path: path, next: 1}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return a, nil
	case err != nil:
		return a, fmt.Errorf("read ids file: %w", err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		// Only a power loss right after a reservation leaves this (the
		// write is not synced). Refusing would keep the unit's log shut
		// for good; instead continue above any plausible past id: the
		// clock in microseconds outgrows any real entry rate.
		v = uint64(time.Now().UnixMicro())
		slog.Warn("logs: unreadable ids file, continuing from the clock", logkey.File, path, logkey.Err, err, logkey.Next, v)
	}
	a.next = max(v, 1)
	a.ceil = a.next
	return a, nil
}

// onDisk is the ceiling the ids file holds now, 0 when it cannot be read.
func onDisk(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// reserve makes sure n more ids are covered by the file. On error the
// ceiling is raised anyway: ids stay unique in this process and a broken
// disk is not retried on every line.
func (a *idAlloc) reserve(n int) error {
	if a.next+uint64(n) <= a.ceil {
		return nil
	}
	c := a.next + uint64(n) + idBlock
	a.ceil = c
	return writeAtomic(a.path, []byte(strconv.FormatUint(c, 10)+"\n"))
}

func (a *idAlloc) take() uint64 {
	id := a.next
	a.next++
	return id
}

// writeAtomic replaces path with data through a temp file and a rename, so
// a crash of the process leaves either the old or the new content. There is
// no fsync: it cost milliseconds per reservation on a busy disk, and the
// case it covers (power loss) is handled by loadIDs' clock floor.
func writeAtomic(path string, data []byte) error {
	dir, base := filepath.Split(path)
	f, err := os.CreateTemp(dir, base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("write %s: %w", path, err), removeIfExists(tmp))
	}
	return nil
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

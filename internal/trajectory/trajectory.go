// Package trajectory keeps the transcripts of runs: for a harness
// that opted in with harvest_trajectory, every activity entry of a run is
// appended to <dir>/<escaped unit>/<run>.jsonl (one logs.Entry as JSON per
// line), so a run's transcript outlives the live log ring and the daemon.
//
// Retention is per unit: at most MaxRunsPerUnit run files and
// MaxBytesPerUnit bytes; the oldest runs (lowest run ids) go first. A run
// that alone outgrows the byte bound keeps its beginning and drops the rest.
//
// A unit's directory is scanned the first time the unit is touched, so a
// new Store on the same dir sees what an earlier daemon kept. Append is
// called from the log's OnEntry hook, under the log's write lock: it takes
// only the unit's own mutex and does one write per entry.
package trajectory

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logs"
)

// Defaults for the zero fields of Options.
const (
	DefaultMaxRunsPerUnit  = 20
	DefaultMaxBytesPerUnit = 16 << 20
)

// maxLine bounds one stored line when reading. An entry's text is at most
// logs.DefaultMaxLineLen bytes; JSON escaping can grow it a few times.
const maxLine = 1 << 20

// Options bound a Store. A zero (or negative) field takes its default.
type Options struct {
	MaxRunsPerUnit  int   // run files kept per unit
	MaxBytesPerUnit int64 // bytes of run files kept per unit
}

func (o Options) withDefaults() Options {
	if o.MaxRunsPerUnit <= 0 {
		o.MaxRunsPerUnit = DefaultMaxRunsPerUnit
	}
	if o.MaxBytesPerUnit <= 0 {
		o.MaxBytesPerUnit = DefaultMaxBytesPerUnit
	}
	return o
}

// Environment variables read by OptionsFromEnv, so an operator (or an
// end-to-end test) can change the retention bounds without a config key.
const (
	EnvMaxRuns  = "HARNESS_TRAJECTORY_MAX_RUNS"
	EnvMaxBytes = "HARNESS_TRAJECTORY_MAX_BYTES"
)

// OptionsFromEnv reads HARNESS_TRAJECTORY_MAX_RUNS and
// HARNESS_TRAJECTORY_MAX_BYTES. An unset variable keeps the default; a set
// one must be a positive integer.
func OptionsFromEnv() (Options, error) {
	var o Options
	if v := os.Getenv(EnvMaxRuns); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return o, fmt.Errorf("trajectory: %s=%q: want a positive integer", EnvMaxRuns, v)
		}
		o.MaxRunsPerUnit = n
	}
	if v := os.Getenv(EnvMaxBytes); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return o, fmt.Errorf("trajectory: %s=%q: want a positive integer", EnvMaxBytes, v)
		}
		o.MaxBytesPerUnit = n
	}
	return o.withDefaults(), nil
}

// Meta describes one kept transcript.
type Meta struct {
	Run     uint64    `json:"run"`
	Entries int       `json:"entries"`
	Bytes   int64     `json:"bytes"`
	First   time.Time `json:"first"`
	Last    time.Time `json:"last"`
	// Capped: entries were dropped because this run alone reached the
	// unit's byte bound. Known only to the Store that dropped them.
	Capped bool `json:"capped,omitempty"`
}

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("trajectory store closed")

// Store is the on-disk set of transcripts. All methods are safe for
// concurrent use.
type Store struct {
	dir string
	opt Options

	mu     sync.Mutex
	units  map[string]*unitStore
	closed bool
}

// unitStore is the transcripts of one unit. mu guards everything below.
type unitStore struct {
	dir    string
	mu     sync.Mutex
	loaded bool
	closed bool
	runs   map[uint64]*Meta
	order  []uint64 // ascending run ids
	bytes  int64    // sum of the files' sizes
	cur    uint64   // run whose file f is
	f      *os.File
}

// Open opens (creating, 0700) the store under dir.
func Open(dir string, opt Options) (*Store, error) {
	if dir == "" {
		return nil, errors.New("trajectory: open: empty directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("trajectory: open: %w", err)
	}
	return &Store{dir: dir, opt: opt.withDefaults(), units: map[string]*unitStore{}}, nil
}

// Options returns the bounds in force.
func (s *Store) Options() Options { return s.opt }

// unit returns the unit's store, loaded from disk. After Close it still
// answers (reads keep working) but the unit refuses appends.
func (s *Store) unit(name string) (*unitStore, error) {
	if name == "" {
		return nil, errcode.Errorf(errcode.InvalidArgument, "trajectory: empty unit name")
	}
	s.mu.Lock()
	u, ok := s.units[name]
	if !ok {
		u = &unitStore{dir: filepath.Join(s.dir, logs.EscapeUnit(name)), runs: map[uint64]*Meta{}, closed: s.closed}
		s.units[name] = u
	}
	s.mu.Unlock()
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.loaded {
		if err := u.load(); err != nil {
			return nil, fmt.Errorf("trajectory: %s: %w", name, err)
		}
		u.loaded = true
	}
	return u, nil
}

// Append adds e to the transcript of run e.RunID of unit. Entries without
// a run are ignored. Entries of one run must come in id order (the log's
// OnEntry hook guarantees that).
func (s *Store) Append(unit string, e logs.Entry) error {
	if e.RunID == 0 {
		return nil
	}
	u, err := s.unit(unit)
	if err != nil {
		return err
	}
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("trajectory: %s: encode entry: %w", unit, err)
	}
	line = append(line, '\n')
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return ErrClosed
	}
	if err := u.append(e, line, s.opt); err != nil {
		return fmt.Errorf("trajectory: %s: run %d: %w", unit, e.RunID, err)
	}
	return nil
}

// append writes one line. Called under u.mu.
func (u *unitStore) append(e logs.Entry, line []byte, opt Options) error {
	m := u.runs[e.RunID]
	if m == nil {
		if err := os.MkdirAll(u.dir, 0o700); err != nil {
			return err
		}
		m = &Meta{Run: e.RunID}
		u.runs[e.RunID] = m
		i, _ := slices.BinarySearch(u.order, e.RunID)
		u.order = slices.Insert(u.order, i, e.RunID)
	}
	n := int64(len(line))
	u.trim(opt, e.RunID, n)
	if u.bytes+n > opt.MaxBytesPerUnit {
		m.Capped = true // only this run is left and it is full
		return nil
	}
	if u.f == nil || u.cur != e.RunID {
		if err := u.closeFile(); err != nil {
			return err
		}
		f, err := os.OpenFile(u.path(e.RunID), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		u.f, u.cur = f, e.RunID
	}
	w, err := u.f.Write(line)
	m.Bytes += int64(w)
	u.bytes += int64(w)
	if err != nil {
		return err
	}
	m.Entries++
	if m.First.IsZero() {
		m.First = e.Time
	}
	m.Last = e.Time
	return nil
}

// trim drops the oldest runs other than keep while the unit holds more
// than MaxRunsPerUnit runs or adding more bytes would pass MaxBytesPerUnit.
// Called under u.mu.
func (u *unitStore) trim(opt Options, keep uint64, more int64) {
	for len(u.order) > 1 && (len(u.order) > opt.MaxRunsPerUnit || u.bytes+more > opt.MaxBytesPerUnit) {
		victim := u.order[0]
		if victim == keep {
			victim = u.order[1]
		}
		u.drop(victim)
	}
}

// drop forgets a run and removes its file. A failed remove leaves a file
// the next scan picks up again; retention then retries. Called under u.mu.
func (u *unitStore) drop(run uint64) {
	if u.cur == run {
		_ = u.closeFile()
	}
	if m := u.runs[run]; m != nil {
		u.bytes -= m.Bytes
	}
	delete(u.runs, run)
	if i, ok := slices.BinarySearch(u.order, run); ok {
		u.order = slices.Delete(u.order, i, i+1)
	}
	_ = os.Remove(u.path(run))
}

func (u *unitStore) closeFile() error {
	if u.f == nil {
		return nil
	}
	err := u.f.Close()
	u.f, u.cur = nil, 0
	return err
}

func (u *unitStore) path(run uint64) string {
	return filepath.Join(u.dir, strconv.FormatUint(run, 10)+".jsonl")
}

// load scans the unit's directory. A torn last line (a crash mid-write) is
// cut off so the file stays a sequence of whole lines. Called under u.mu.
func (u *unitStore) load() error {
	des, err := os.ReadDir(u.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, de := range des {
		name := de.Name()
		run, err := strconv.ParseUint(strings.TrimSuffix(name, ".jsonl"), 10, 64)
		if !de.Type().IsRegular() || !strings.HasSuffix(name, ".jsonl") || err != nil || run == 0 {
			continue
		}
		m, err := scanMeta(u.path(run))
		if err != nil {
			return err
		}
		m.Run = run
		u.runs[run] = m
		u.order = append(u.order, run)
		u.bytes += m.Bytes
	}
	slices.Sort(u.order)
	return nil
}

// scanMeta counts the entries of one run file and repairs a torn tail.
func scanMeta(path string) (*Meta, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := &Meta{}
	r := bufio.NewReaderSize(f, 64<<10)
	var good int64
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		good += int64(len(line))
		var e logs.Entry
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		m.Entries++
		if m.First.IsZero() {
			m.First = e.Time
		}
		m.Last = e.Time
	}
	if st, err := f.Stat(); err == nil && st.Size() > good {
		if err := f.Truncate(good); err != nil {
			return nil, fmt.Errorf("repair %s: %w", path, err)
		}
	}
	m.Bytes = good
	return m, nil
}

// List returns the kept transcripts of unit, oldest run first.
func (s *Store) List(unit string) []Meta {
	u, err := s.unit(unit)
	if err != nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]Meta, 0, len(u.order))
	for _, run := range u.order {
		out = append(out, *u.runs[run])
	}
	return out
}

// Get returns the metadata of one kept transcript.
func (s *Store) Get(unit string, run uint64) (Meta, bool) {
	u, err := s.unit(unit)
	if err != nil {
		return Meta{}, false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	m, ok := u.runs[run]
	if !ok {
		return Meta{}, false
	}
	return *m, true
}

// Read returns the entries of run with ID > after, oldest first, as many
// as fit in maxBytes of JSON lines (maxBytes <= 0: no cap). So that a
// reader paging with the last id always progresses, the first entry is
// returned even when it alone is larger than maxBytes. truncated says that
// more entries follow. A run that is not kept is an invalid argument.
func (s *Store) Read(unit string, run uint64, after uint64, maxBytes int) (entries []logs.Entry, truncated bool, err error) {
	u, err := s.unit(unit)
	if err != nil {
		return nil, false, err
	}
	// Only the bytes written so far are read, so a concurrent Append
	// never shows a partial line; the file is read outside the lock.
	u.mu.Lock()
	m, ok := u.runs[run]
	var size int64
	if ok {
		size = m.Bytes
	}
	u.mu.Unlock()
	if !ok {
		return nil, false, errcode.Errorf(errcode.InvalidArgument, "%s has no transcript of run %d", unit, run)
	}
	f, err := os.Open(u.path(run))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, errcode.Errorf(errcode.InvalidArgument, "%s has no transcript of run %d (dropped by retention)", unit, run)
	}
	if err != nil {
		return nil, false, fmt.Errorf("trajectory: %s: run %d: %w", unit, run, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, size))
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	used := 0
	entries = []logs.Entry{}
	for sc.Scan() {
		line := sc.Bytes()
		var e logs.Entry
		if json.Unmarshal(line, &e) != nil || e.ID <= after {
			continue
		}
		if maxBytes > 0 && len(entries) > 0 && used+len(line)+1 > maxBytes {
			return entries, true, nil
		}
		used += len(line) + 1
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		return entries, false, fmt.Errorf("trajectory: %s: run %d: read: %w", unit, run, err)
	}
	return entries, false, nil
}

// Close closes the open run files. Appends after Close fail; reads keep
// working.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	us := make([]*unitStore, 0, len(s.units))
	for _, u := range s.units {
		us = append(us, u)
	}
	s.mu.Unlock()
	var errs []error
	for _, u := range us {
		u.mu.Lock()
		u.closed = true
		errs = append(errs, u.closeFile())
		u.mu.Unlock()
	}
	return errors.Join(errs...)
}

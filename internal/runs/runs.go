// Package runs keeps the run history (docs/design/runs.md): one record per spawn of a
// unit, persisted as append-only JSON lines with a per-unit retention bound.
// Each change appends the full record; on Open the last record per id wins.
// The file is compacted (rewritten atomically) when it holds about twice the
// retained records, so it stays bounded without a rewrite per change. One
// writer goroutine does every write (file.go): a change never waits for
// the disk, and a failing disk is retried, counted and never fails a run.
package runs

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logkey"
)

// Cause says why a run was started (api.Cause* are its values).
type Cause = api.Cause

// DefaultRetain is the number of runs kept per unit when Open gets <= 0.
const DefaultRetain = 100

// Run is one spawn of a unit; its wire shape is api.Run. EndedAt is nil
// while it runs.
type Run = api.Run

// cloneRun copies r so that callers never share the pointer fields.
func cloneRun(r Run) Run {
	if r.EndedAt != nil {
		t := *r.EndedAt
		r.EndedAt = &t
	}
	if r.ExitCode != nil {
		c := *r.ExitCode
		r.ExitCode = &c
	}
	if r.LimitUntil != nil {
		t := *r.LimitUntil
		r.LimitUntil = &t
	}
	return r
}

// Errors of the store.
var (
	// ErrUnknownRun: no retained run has that id.
	ErrUnknownRun = errors.New("unknown run")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("run store closed")
)

// compactSlack is added to the compaction threshold so a store with few
// runs (each change appends a line) is not rewritten every few changes.
const compactSlack = 64

// waiter is shared by every Wait on one run; End fills run and closes done,
// so a waiter gets the final record even if retention drops it right after.
type waiter struct {
	done chan struct{}
	run  Run
}

// Store is the run history. All methods are safe for concurrent use.
type Store struct {
	path     string
	retain   int
	retainOf map[string]int // keep_runs per unit, over retain

	mu      sync.Mutex
	f       *os.File
	now     func() time.Time
	mask    func(string) string // nil: none (SetMask)
	runs    map[uint64]*Run
	byUnit  map[string][]uint64 // ascending ids per unit
	nextID  uint64
	lines   int // records in the file
	waiters map[uint64]*waiter
	closed  chan struct{}
	err     error // persistence failures of calls that cannot return them

	w writer // the file's writer goroutine (file.go)
}

// Open loads the history at path (created 0600, its directory 0700) and
// appends to it. retainPerUnit <= 0 means DefaultRetain.
func Open(path string, retainPerUnit int) (*Store, error) {
	return openWith(path, retainPerUnit, nil)
}

// openWith is Open with the file writes passed through wrap (tests slow
// the disk down or make it fail).
func openWith(path string, retainPerUnit int, wrap func(io.Writer) io.Writer) (*Store, error) {
	if retainPerUnit <= 0 {
		retainPerUnit = DefaultRetain
	}
	s := &Store{
		path:     path,
		retain:   retainPerUnit,
		retainOf: map[string]int{},
		now:      time.Now,
		runs:     map[uint64]*Run{},
		byUnit:   map[string][]uint64{},
		nextID:   1,
		waiters:  map[uint64]*waiter{},
		closed:   make(chan struct{}),
		w:        writer{wrap: wrap},
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("runs: open %s: %w", path, err)
	}
	clean, err := s.load()
	if err != nil {
		return nil, fmt.Errorf("runs: open %s: %w", path, err)
	}
	for unit := range s.byUnit {
		s.trim(unit)
	}
	// A torn or corrupt line (crash mid-append) would corrupt the next
	// append too: rewrite the file from what was understood.
	if !clean || s.lines > s.compactAt() {
		if err := s.compact(); err != nil {
			// A full disk: memory is the truth, and the writer
			// rewrites the file once it can (file.go).
			slog.Warn("runs: rewriting the history failed; retrying", logkey.File, path, logkey.Err, err)
			s.w.rewrite, s.w.failures, s.w.lastErr = true, 1, err
		}
	} else {
		s.f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("runs: open %s: %w", path, err)
		}
	}
	s.startWriter()
	if s.w.rewrite {
		s.w.kick <- struct{}{}
	}
	return s, nil
}

// load replays the file. clean is false when some line could not be read.
func (s *Store) load() (clean bool, err error) {
	f, err := os.Open(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read: %w", err)
	}
	defer f.Close() //nolint:errcheck // read-only: a close error loses nothing
	clean = true
	r := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var run Run
			if line[len(line)-1] != '\n' || json.Unmarshal(line, &run) != nil || run.ID == 0 {
				slog.Warn("runs: skipping unreadable record", logkey.File, s.path, logkey.Line, n)
				clean = false
			} else {
				s.put(run)
				s.lines++
			}
		}
		if errors.Is(err, io.EOF) {
			return clean, nil
		}
		if err != nil {
			return false, fmt.Errorf("read: %w", err)
		}
	}
}

// put stores run in memory (replacing an older record of the same id).
func (s *Store) put(run Run) {
	if old, ok := s.runs[run.ID]; ok {
		if old.Harness != run.Harness {
			s.dropFromUnit(old.Harness, run.ID)
			s.addToUnit(run.Harness, run.ID)
		}
	} else {
		s.addToUnit(run.Harness, run.ID)
	}
	r := run
	s.runs[run.ID] = &r
	s.nextID = max(s.nextID, run.ID+1)
}

func (s *Store) addToUnit(unit string, id uint64) {
	ids := s.byUnit[unit]
	i, _ := slices.BinarySearch(ids, id)
	s.byUnit[unit] = slices.Insert(ids, i, id)
}

func (s *Store) dropFromUnit(unit string, id uint64) {
	ids := s.byUnit[unit]
	if i, ok := slices.BinarySearch(ids, id); ok {
		ids = slices.Delete(ids, i, i+1)
	}
	if len(ids) == 0 {
		delete(s.byUnit, unit)
		return
	}
	s.byUnit[unit] = ids
}

// trim drops the oldest ended runs of unit beyond the retention bound. A
// run that has not ended is kept: it is still somebody's current run.
func (s *Store) trim(unit string) {
	ids := s.byUnit[unit]
	retain := s.retain
	if n, ok := s.retainOf[unit]; ok {
		retain = n
	}
	excess := len(ids) - retain
	for i := 0; i < len(ids) && excess > 0; {
		if r := s.runs[ids[i]]; r.Ended() {
			delete(s.runs, ids[i])
			ids = slices.Delete(ids, i, i+1)
			excess--
			continue
		}
		i++
	}
	s.byUnit[unit] = ids
}

// compactAt is the file size (in records) beyond which the file is
// rewritten: about twice the retained records.
func (s *Store) compactAt() int { return 2*len(s.runs) + compactSlack }

// SetClock replaces the clock used for StartedAt and EndedAt (tests,
// or a supervisor with its own clock).
func (s *Store) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// SetMask makes the store mask what an agent or a program wrote before
// it is kept (a job's result, an ending's note): the file is a state file,
// and the daemon's masker knows the fleet's secrets (docs/design/masking.md).
func (s *Store) SetMask(mask func(string) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mask = mask
}

// masked is text as the store keeps it. Called under mu.
func (s *Store) masked(text string) string {
	if s.mask == nil || text == "" {
		return text
	}
	return s.mask(text)
}

// Begin records a new run of unit, started now. Its id is above every id
// this store's file has ever held, also across re-Open.
func (s *Store) Begin(unit string, cause Cause) (Run, error) {
	if unit == "" {
		return Run{}, errors.New("runs: begin: empty unit name")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return Run{}, fmt.Errorf("runs: begin %s: %w", unit, err)
	}
	run := Run{ID: s.nextID, Harness: unit, Cause: cause, StartedAt: s.now()}
	s.put(run)
	if err := s.persist(run); err != nil {
		// Not started as far as the caller knows: do not keep a run that
		// would dangle in memory forever. Its id stays used.
		delete(s.runs, run.ID)
		s.dropFromUnit(unit, run.ID)
		return Run{}, fmt.Errorf("runs: begin %s: %w", unit, err)
	}
	s.trim(unit)
	return cloneRun(run), nil
}

// SetPID records the pid of a run once the process exists.
func (s *Store) SetPID(id uint64, pid int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.lookup(id)
	if err != nil {
		return fmt.Errorf("runs: set pid of %d: %w", id, err)
	}
	r.PID = pid
	if err := s.persist(*r); err != nil {
		return fmt.Errorf("runs: set pid of %d: %w", id, err)
	}
	return nil
}

// End records that a run ended now, with its exit code or the signal that
// ended it (outcome ok for code 0, failed otherwise), and wakes every Wait
// on it. The run is ended in memory even if persisting fails; that failure
// is returned.
func (s *Store) End(id uint64, exitCode *int, signal string) error {
	return s.Finish(id, Ending{ExitCode: exitCode, Signal: signal})
}

// Ending is how a run ended. An empty Outcome is derived from the exit
// status (api.ExitOutcome).
type Ending struct {
	ExitCode *int
	Signal   string
	Outcome  api.RunOutcome
	Note     string
	// EndCause is api.EndCauseOOM when the OOM killer ended the run.
	EndCause string
}

// Finish is End with the outcome given by who ended the run (a timeout,
// a stop, the loop guard).
func (s *Store) Finish(id uint64, e Ending) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.lookup(id)
	if err != nil {
		return fmt.Errorf("runs: end %d: %w", id, err)
	}
	if r.Ended() {
		return fmt.Errorf("runs: end %d: already ended at %s", id, r.EndedAt.Format(time.RFC3339))
	}
	r.EndCause = e.EndCause
	s.end(r, e)
	if err := s.persist(*r); err != nil {
		return fmt.Errorf("runs: end %d: %w", id, err)
	}
	return nil
}

// SetAgent records what the run's agent reported (docs/design/agents.md): the
// non-zero fields of a replace the run's, so a transcript read and a job
// result can each add theirs. It works on an ended run too (a job's
// result is read at its exit).
func (s *Store) SetAgent(id uint64, a api.RunAgent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.lookup(id)
	if err != nil {
		return fmt.Errorf("runs: set agent of %d: %w", id, err)
	}
	if a.SessionID != "" {
		r.SessionID = a.SessionID
	}
	if a.Model != "" {
		r.Model = a.Model
	}
	if a.Tokens != (api.Tokens{}) {
		r.Tokens = a.Tokens
	}
	if a.CostUSD != 0 {
		r.CostUSD = a.CostUSD
	}
	if a.Result != "" {
		r.Result = clip(s.masked(a.Result), api.MaxResultBytes)
	}
	if len(a.ToolCalls) > 0 {
		r.ToolCalls, r.ToolCallsOmitted = a.ToolCalls, a.ToolCallsOmitted
		if n := len(r.ToolCalls) - api.MaxRunToolCalls; n > 0 {
			r.ToolCalls, r.ToolCallsOmitted = r.ToolCalls[n:], r.ToolCallsOmitted+n
		}
	}
	if a.LastAPIError != "" {
		r.LastAPIError = clip(s.masked(a.LastAPIError), api.MaxTurnText)
	}
	if err := s.persist(*r); err != nil {
		return fmt.Errorf("runs: set agent of %d: %w", id, err)
	}
	return nil
}

// SetLimitUntil records that the run's harness is held on a usage limit
// until t (docs/design/agents.md): the hold is read back from the run history, so it
// holds across a daemon restart.
func (s *Store) SetLimitUntil(id uint64, t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.lookup(id)
	if err != nil {
		return fmt.Errorf("runs: set limit of %d: %w", id, err)
	}
	r.LimitUntil = &t
	if err := s.persist(*r); err != nil {
		return fmt.Errorf("runs: set limit of %d: %w", id, err)
	}
	return nil
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// LastSession returns the newest session id recorded on a run of unit
// since the run id after (0: any), "" when none: what resume continues.
func (s *Store) LastSession(unit string, after uint64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.byUnit[unit]
	for i := len(ids) - 1; i >= 0; i-- {
		if ids[i] <= after {
			break
		}
		if r := s.runs[ids[i]]; r != nil && r.SessionID != "" {
			return r.SessionID
		}
	}
	return ""
}

// Record adds a run that never spawned and ended at once: a skipped,
// missed or held firing (docs/design/runs.md), so the history shows it.
func (s *Store) Record(unit string, cause Cause, outcome api.RunOutcome, note string) (Run, error) {
	if unit == "" {
		return Run{}, errors.New("runs: record: empty unit name")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return Run{}, fmt.Errorf("runs: record %s: %w", unit, err)
	}
	run := Run{ID: s.nextID, Harness: unit, Cause: cause, StartedAt: s.now()}
	s.put(run)
	r := s.runs[run.ID]
	s.end(r, Ending{Outcome: outcome, Note: note})
	if err := s.persist(*r); err != nil {
		delete(s.runs, run.ID)
		s.dropFromUnit(unit, run.ID)
		return Run{}, fmt.Errorf("runs: record %s: %w", unit, err)
	}
	s.trim(unit)
	return cloneRun(*r), nil
}

// SetRetain bounds the history of one unit (keep_runs); n <= 0 goes back
// to the store's bound. Older ended runs beyond it go now.
func (s *Store) SetRetain(unit string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n <= 0 {
		delete(s.retainOf, unit)
	} else {
		s.retainOf[unit] = n
	}
	if _, ok := s.byUnit[unit]; ok {
		s.trim(unit)
	}
}

// end marks r ended and wakes its waiters. Called under mu.
func (s *Store) end(r *Run, e Ending) {
	t := s.now()
	r.EndedAt = &t
	if e.ExitCode != nil {
		c := *e.ExitCode
		r.ExitCode = &c
	}
	r.Signal = e.Signal
	r.Outcome, r.Note = e.Outcome, s.masked(e.Note)
	if r.Outcome == "" {
		r.Outcome = api.ExitOutcome(e.ExitCode, e.Signal)
	}
	if w, ok := s.waiters[r.ID]; ok {
		w.run = cloneRun(*r)
		close(w.done)
		delete(s.waiters, r.ID)
	}
}

// CloseDangling ends every run that was still open when the previous
// process died (EndedAt nil after Open), recording signal, and returns how
// many it ended. Call it at daemon start, before anything is spawned.
// Persistence failures are logged and returned by Close.
func (s *Store) CloseDangling(signal string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.usable() != nil {
		return 0
	}
	var open []*Run
	for _, r := range s.runs {
		if !r.Ended() {
			open = append(open, r)
		}
	}
	slices.SortFunc(open, func(a, b *Run) int { return cmpID(a.ID, b.ID) })
	for _, r := range open {
		s.end(r, Ending{Signal: signal, Outcome: api.RunInterrupted, Note: "the daemon ended while it ran"})
		if err := s.persist(*r); err != nil {
			err = fmt.Errorf("runs: close dangling run %d: %w", r.ID, err)
			slog.Warn("runs: persist failed", logkey.Err, err)
			s.err = errors.Join(s.err, err)
		}
	}
	for _, r := range open {
		s.trim(r.Harness)
	}
	return len(open)
}

func cmpID(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// lookup returns the retained run id. Called under mu.
func (s *Store) lookup(id uint64) (*Run, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	r, ok := s.runs[id]
	if !ok {
		return nil, ErrUnknownRun
	}
	return r, nil
}

func (s *Store) usable() error {
	select {
	case <-s.closed:
		return ErrClosed
	default:
		return nil
	}
}

// Close writes what is queued, closes the file and wakes every Wait with
// ErrClosed. It returns failures that earlier calls could not return, and
// the writer's if the file does not hold the whole history.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.usable() != nil {
		s.mu.Unlock()
		return nil
	}
	close(s.closed)
	s.mu.Unlock()
	close(s.w.stop) // the writer writes what is queued, then ends
	<-s.w.done
	s.mu.Lock()
	defer s.mu.Unlock()
	err := errors.Join(s.err, s.w.lastErr)
	if s.f != nil {
		if cerr := s.f.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		s.f = nil
	}
	if err != nil {
		return fmt.Errorf("runs: close %s: %w", s.path, err)
	}
	return nil
}

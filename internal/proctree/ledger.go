package proctree

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
)

// LedgerEntry records one spawned unit process, enough for a later daemon
// to find and end its tree after a crash.
type LedgerEntry struct {
	Unit     string    `json:"unit"`
	PID      int       `json:"pid"`
	PGID     int       `json:"pgid"`
	SID      int       `json:"sid"`
	Marker   string    `json:"marker"`
	Instance string    `json:"instance"`
	Started  time.Time `json:"started"`
	// Start is the main process's start time (see Ident), Boot the boot
	// it ran in; Members are the processes of its tree as last seen (kept
	// up to date by a Tracker). Only under the same boot id do they still
	// name the same processes.
	Start   uint64  `json:"start,omitempty"`
	Boot    string  `json:"boot,omitempty"`
	Members []Ident `json:"members,omitempty"`
}

// NewEntry builds the entry for a just-started unit process, reading its
// process group, session and start time from the kernel. With SysProcAttr
// group and session equal pid, because cmd.Start returns only after the
// child's setsid and exec.
func NewEntry(unit string, pid int, marker, instance string) (LedgerEntry, error) {
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		return LedgerEntry{}, fmt.Errorf("ledger entry for %s pid %d: getpgid: %w", unit, pid, err)
	}
	st, err := readStat(pid)
	if err != nil {
		return LedgerEntry{}, fmt.Errorf("ledger entry for %s pid %d: %w", unit, pid, err)
	}
	return LedgerEntry{Unit: unit, PID: pid, PGID: pgid, SID: st.sid, Marker: marker,
		Instance: instance, Started: time.Now().UTC(), Start: st.start}, nil
}

// LedgerCgroup records a cgroup v2 subtree a daemon put its units in, with
// its cgroup id (inode number) and boot, so that a later start ends only
// that very cgroup.
type LedgerCgroup struct {
	Path string `json:"path"`
	ID   uint64 `json:"id"`
	Boot string `json:"boot"`
}

// ledgerFile is the on-disk shape. Instances lists daemon instances that
// may have spawned something, recorded before the first spawn, so even a
// crash between a spawn and its Add is covered by the instance prefix.
type ledgerFile struct {
	Instances []string       `json:"instances"`
	Entries   []LedgerEntry  `json:"entries"`
	Cgroups   []LedgerCgroup `json:"cgroups,omitempty"`
}

// Ledger is the state-dir record of live unit trees. It is safe for
// concurrent use; the file is replaced atomically (temp file + rename)
// with mode 0600.
//
// AddInstance, AddCgroup and Clear write before they return (they come
// before the first spawn and after the last). Add, Remove and SetMembers
// come from unit actors and the tracker, which must not wait for a disk:
// they change memory and wake a writer goroutine, which writes the newest
// state (one write for a burst of changes, at most one per addGap) and,
// when a write fails (a full disk), retries with a backoff. A crash
// between a spawn and its write is covered by the instance record, as a
// crash between the spawn and Add always was.
//
// At daemon start call CleanupLeftovers on the path first, then OpenLedger,
// then AddInstance, and only then spawn.
type Ledger struct {
	path string
	boot string // stamped on every entry and cgroup added
	mu   sync.Mutex
	data ledgerFile // under mu; a write encodes a snapshot of it unlocked

	gen, saved uint64        // under mu: changes made, changes on disk
	urgent     uint64        // under mu: the gen of the last change that must not wait (removeGap)
	lastWrite  time.Time     // under mu: when the last write took its snapshot (addGap)
	hurry      chan struct{} // capacity 1: an urgent change ends the writer's wait
	writing    bool          // under mu: the writer goroutine runs
	idle       *sync.Cond    // on mu: signalled when the writer stops
	failures   int           // under mu: failed writes since open
	lastErr    error         // under mu: the last write's failure
	retry      *time.Timer
	delay      time.Duration
	wmu        sync.Mutex                // one file write at a time
	wrap       func(io.Writer) io.Writer // tests: a slow or failing disk
}

// OpenLedger loads the ledger at path, creating an empty one (and its
// directory, 0700) when none exists.
func OpenLedger(path string) (*Ledger, error) {
	boot, err := BootID()
	if err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	l := &Ledger{path: path, boot: boot, hurry: make(chan struct{}, 1)}
	l.idle = sync.NewCond(&l.mu)
	data, err := readLedgerFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("open ledger: %w", err)
		}
		if err := writeLedgerFile(path, ledgerFile{}, nil); err != nil {
			return nil, fmt.Errorf("open ledger: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("open ledger: %w", err)
	default:
		l.data = data
	}
	return l, nil
}

// Path returns the file the ledger writes.
func (l *Ledger) Path() string { return l.path }

// AddInstance records a daemon instance id, so a later start also ends
// processes carrying any marker of that instance.
func (l *Ledger) AddInstance(instance string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if instance == "" || slices.Contains(l.data.Instances, instance) {
		return nil
	}
	next := l.data
	next.Instances = append(slices.Clone(l.data.Instances), instance)
	return l.commit(next, "add instance "+instance)
}

// Add records e, replacing an entry with the same marker.
func (l *Ledger) Add(e LedgerEntry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.Boot = l.boot
	l.data.Entries = slices.DeleteFunc(l.data.Entries,
		func(x LedgerEntry) bool { return x.Marker == e.Marker })
	l.data.Entries = append(l.data.Entries, e)
	l.changed()
	return nil
}

// Remove forgets the entry with marker, once its whole tree is gone.
func (l *Ledger) Remove(marker string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.ContainsFunc(l.data.Entries, func(x LedgerEntry) bool { return x.Marker == marker }) {
		return nil
	}
	l.data.Entries = slices.DeleteFunc(l.data.Entries,
		func(x LedgerEntry) bool { return x.Marker == marker })
	l.gen++ // may wait for removeGap: a stale entry is harmless
	l.kickLocked()
	return nil
}

// SetMembers records the current members of the entries named by marker
// (what a Tracker attributed to them). Unknown markers are skipped; the
// file is written only when something changed.
func (l *Ledger) SetMembers(members map[string][]Ident) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	changed := false
	for i, e := range l.data.Entries {
		m, ok := members[e.Marker]
		if !ok || slices.Equal(m, e.Members) {
			continue
		}
		l.data.Entries[i].Members = slices.Clone(m) // never changed in place: snapshots share it
		changed = true
	}
	if changed {
		l.changed()
	}
	return nil
}

// AddCgroup records the cgroup subtree at path with its cgroup id.
func (l *Ledger) AddCgroup(path string, id uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	next := l.data
	next.Cgroups = slices.DeleteFunc(slices.Clone(l.data.Cgroups),
		func(c LedgerCgroup) bool { return c.Path == path })
	next.Cgroups = append(next.Cgroups, LedgerCgroup{Path: path, ID: id, Boot: l.boot})
	return l.commit(next, "add cgroup "+path)
}

// Clear empties the ledger, for a clean shutdown after every tree ended.
func (l *Ledger) Clear() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.commit(ledgerFile{}, "clear")
}

// Entries returns a copy of the recorded entries.
func (l *Ledger) Entries() []LedgerEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.data.Entries)
}

// commit adopts next and writes it before returning. Called under mu,
// which it releases while writing and takes again.
func (l *Ledger) commit(next ledgerFile, what string) error {
	l.data = next
	l.gen++
	l.mu.Unlock()
	err := l.save()
	l.mu.Lock()
	if err != nil {
		l.kickLocked() // memory holds the change: the writer retries it
		return fmt.Errorf("ledger %s: %w", what, err)
	}
	return nil
}

// changed wakes the writer after l.data was changed in place. Called
// under mu; never waits for the disk. Add, Remove and SetMembers change
// the entries in place, not copy on write: a copy per change made a stop
// of 1,000 units copy 1,000 entries 1,000 times (most of its CPU time);
// the writer copies once per write instead (snapshot).
func (l *Ledger) changed() {
	l.gen++
	l.urgent = l.gen
	select {
	case l.hurry <- struct{}{}:
	default:
	}
	l.kickLocked()
}

// removeGap is how long the writer lets removals gather before writing
// them. `stop --all` of 1,000 units removes 1,000 entries, and writing the
// file after each took an eighth of the daemon's CPU for the stop. A
// removal may wait: an entry whose processes are gone is passed over at
// the next start, which checks each pid's start time. An addition waits
// at most addGap, and so does anything written with it.
const removeGap = 100 * time.Millisecond

// addGap is the least time between two writes for additions. A lone spawn
// is written at once; a burst of them (start --all of 1,000 units) is
// written every addGap instead of back to back: each write encodes every
// entry, and writing after each addition took half the daemon's CPU for
// the start. A crash before the write is covered by the instance record.
const addGap = 25 * time.Millisecond

// snapshot is a copy of l.data that later changes leave alone (entries'
// Members are replaced, never changed in place). Called under mu.
func (l *Ledger) snapshot() ledgerFile {
	d := l.data
	d.Instances = slices.Clone(d.Instances)
	d.Entries = slices.Clone(d.Entries)
	d.Cgroups = slices.Clone(d.Cgroups)
	return d
}

func (l *Ledger) kickLocked() {
	if !l.writing {
		l.writing = true
		go l.writeLoop()
	}
}

// writeLoop writes until the file holds the newest state or a write
// fails; then it ends (a timer retries a failure).
func (l *Ledger) writeLoop() {
	for {
		l.waitIfLazy()
		err := l.save()
		l.mu.Lock()
		if err != nil || l.saved == l.gen {
			if err != nil && l.retry == nil {
				l.delay = min(max(2*l.delay, 250*time.Millisecond), 30*time.Second)
				l.retry = time.AfterFunc(l.delay, func() {
					l.mu.Lock()
					defer l.mu.Unlock()
					l.retry = nil
					if l.saved != l.gen {
						l.kickLocked()
					}
				})
			}
			l.writing = false
			l.idle.Broadcast()
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
	}
}

// waitIfLazy waits removeGap when every change not yet written is a
// removal, unless a change that must not wait comes meanwhile; otherwise
// it waits what is left of addGap since the last write.
func (l *Ledger) waitIfLazy() {
	l.mu.Lock()
	lazy := l.urgent <= l.saved
	if lazy {
		select {
		case <-l.hurry: // from a change written already
		default:
		}
	}
	gap := addGap - time.Since(l.lastWrite)
	l.mu.Unlock()
	if !lazy {
		if gap > 0 {
			t := time.NewTimer(gap)
			defer t.Stop()
			<-t.C
		}
		return
	}
	t := time.NewTimer(removeGap)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.hurry:
	}
}

// save writes the newest state unless the file holds it already. A
// snapshot is taken under wmu, so writes land in the order of changes.
func (l *Ledger) save() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	gen := l.gen
	done := gen == l.saved
	var snap ledgerFile
	if !done {
		snap = l.snapshot()
		l.lastWrite = time.Now()
	}
	l.mu.Unlock()
	if done {
		return nil
	}
	err := writeLedgerFile(l.path, snap, l.wrap)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failures++
		l.lastErr = err
		return err
	}
	l.saved, l.lastErr, l.delay = gen, nil, 0
	return nil
}

// Flush waits until the writer has stopped: the file holds every change
// made before the call, or the last write failed (WriteFailures).
func (l *Ledger) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.writing {
		l.idle.Wait()
	}
}

// WriteFailures counts failed writes of the ledger file since it was
// opened; a failed write is retried, so the count says the disk refused at
// some point.
func (l *Ledger) WriteFailures() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failures
}

// WriteError is the last write's failure, nil once a write succeeded.
func (l *Ledger) WriteError() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastErr
}

func readLedgerFile(path string) (ledgerFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return ledgerFile{}, fmt.Errorf("read ledger %s: %w", path, err)
	}
	var f ledgerFile
	if len(b) == 0 {
		return f, nil
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return ledgerFile{}, fmt.Errorf("parse ledger %s: %w", path, err)
	}
	return f, nil
}

// writeLedgerFile replaces path atomically: a reader (or a crashed daemon's
// successor) sees the old or the new content, never a torn file. It does
// not fsync: the ledger has to survive the daemon, not the machine. A power
// loss or kernel crash reboots and so ends every recorded process, and a
// new boot id voids what the file says about them.
func writeLedgerFile(path string, f ledgerFile, wrap func(io.Writer) io.Writer) (err error) {
	// Compact: the file is rewritten whole after changes, up to every
	// entry of 1,000 units at a time during a stop --all, and indenting
	// took a third of each write's CPU.
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode ledger: %w", err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write ledger: %w", err)
	}
	defer func() {
		if err != nil {
			if rerr := os.Remove(tmp.Name()); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				err = errors.Join(err, fmt.Errorf("remove temp ledger: %w", rerr))
			}
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close() // the chmod error is the one to report
		return fmt.Errorf("write ledger: %w", err)
	}
	var w io.Writer = tmp
	if wrap != nil {
		w = wrap(tmp)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		_ = tmp.Close() // the write error is the one to report
		return fmt.Errorf("write ledger: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write ledger: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write ledger: %w", err)
	}
	return nil
}

package webhook

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// dedup remembers delivery ids, and the digests of bodies signed alone
// (Delivery.Body), for DedupWindow, in memory and in an append-only file
// that is compacted at every start.
type dedup struct {
	mu   sync.Mutex
	now  func() time.Time
	seen map[string]time.Time // dedupRecord.key()
	f    *os.File
}

// dedupRecord is one line of the file: a route's delivery id or body
// digest, and when it was first seen.
type dedupRecord struct {
	Route string    `json:"route"`
	ID    string    `json:"id,omitempty"`
	Body  string    `json:"body,omitempty"`
	At    time.Time `json:"at"`
}

func (r dedupRecord) key() string {
	if r.Body != "" {
		return r.Route + "\x01" + r.Body
	}
	return r.Route + "\x00" + r.ID
}

// records are the dedup records of a delivery to route, one per key it has.
func records(route string, dl Delivery) []dedupRecord {
	var out []dedupRecord
	if dl.ID != "" {
		out = append(out, dedupRecord{Route: route, ID: dl.ID})
	}
	if dl.Body != "" {
		out = append(out, dedupRecord{Route: route, Body: dl.Body})
	}
	return out
}

// maxDedup bounds the keys kept: past it, expired ones are dropped, and if
// none has expired the oldest go (a flood cannot grow memory for a day).
const maxDedup = 100_000

func openDedup(path string, now func() time.Time) (*dedup, error) {
	d := &dedup{now: now, seen: map[string]time.Time{}}
	kept := map[string]dedupRecord{}
	if f, err := os.Open(path); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var r dedupRecord
			if json.Unmarshal(sc.Bytes(), &r) == nil && now().Sub(r.At) < DedupWindow {
				d.seen[r.key()] = r.At
				kept[r.key()] = r
			}
		}
		f.Close()
	}
	// Compact: write what is still in the window, then append to it.
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	enc := json.NewEncoder(f)
	for _, r := range kept {
		enc.Encode(r)
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	if d.f, err = os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600); err != nil {
		return nil, err
	}
	return d, nil
}

// known reports whether a delivery to route was seen in the window, by
// its id or its body.
func (d *dedup) known(route string, dl Delivery) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.knownLocked(records(route, dl), d.now())
}

func (d *dedup) knownLocked(rs []dedupRecord, now time.Time) bool {
	for _, r := range rs {
		if at, ok := d.seen[r.key()]; ok && now.Sub(at) < DedupWindow {
			return true
		}
	}
	return false
}

// add records a delivery to route and reports whether it is new: neither
// its id nor its body was seen in the window. An error is the file's: the
// delivery is still remembered until the daemon stops.
func (d *dedup) add(route string, dl Delivery) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	rs := records(route, dl)
	if d.knownLocked(rs, now) {
		return false, nil
	}
	var errs []error
	for _, r := range rs {
		if len(d.seen) >= maxDedup {
			d.pruneLocked(now)
		}
		r.At = now
		d.seen[r.key()] = now
		b, err := json.Marshal(r)
		if err == nil {
			_, err = d.f.Write(append(b, '\n'))
		}
		errs = append(errs, err)
	}
	return true, errors.Join(errs...)
}

func (d *dedup) pruneLocked(now time.Time) {
	var oldestK string
	var oldest time.Time
	for k, at := range d.seen {
		if now.Sub(at) >= DedupWindow {
			delete(d.seen, k)
			continue
		}
		if oldestK == "" || at.Before(oldest) {
			oldestK, oldest = k, at
		}
	}
	if len(d.seen) >= maxDedup {
		delete(d.seen, oldestK)
	}
}

func (d *dedup) close() error { return d.f.Close() }

// files are the payload files: each is bound to the run it was given to
// (index.json beside them) and removed once the run history no longer
// holds that run. One never bound (the trigger failed, or the daemon died
// between writing and starting) goes after an hour.
type files struct {
	mu    sync.Mutex
	dir   string
	runOf map[string]uint64 // base name -> run
}

const unboundGrace = time.Hour

func openFiles(dir string) *files {
	fs := &files{dir: dir, runOf: map[string]uint64{}}
	if b, err := os.ReadFile(filepath.Join(dir, "index.json")); err == nil {
		json.Unmarshal(b, &fs.runOf)
	}
	return fs
}

// write stores body in a new 0600 file and returns its path.
func (fs *files) write(route string, body []byte) (string, error) {
	path := filepath.Join(fs.dir, route+"-"+randomName()+".json")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	if _, err := f.Write(body); err != nil {
		f.Close()
		os.Remove(path)
		return "", err
	}
	return path, f.Close()
}

func (fs *files) remove(path string) { os.Remove(path) }

// bind ties path to run.
func (fs *files) bind(path string, run uint64) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.runOf[filepath.Base(path)] = run
	fs.saveLocked()
}

func (fs *files) saveLocked() {
	b, _ := json.Marshal(fs.runOf)
	tmp := filepath.Join(fs.dir, "index.json.tmp")
	if os.WriteFile(tmp, b, 0o600) == nil {
		os.Rename(tmp, filepath.Join(fs.dir, "index.json"))
	}
}

// sweep removes the files of runs kept no longer, and unbound ones past
// their grace.
func (fs *files) sweep(kept func(uint64) bool, now time.Time) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	ents, err := os.ReadDir(fs.dir)
	if err != nil {
		return
	}
	changed := false
	present := map[string]bool{}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") || name == "index.json" {
			continue
		}
		present[name] = true
		run, bound := fs.runOf[name]
		switch {
		case bound && kept != nil && !kept(run):
			os.Remove(filepath.Join(fs.dir, name))
			delete(fs.runOf, name)
			changed = true
		case !bound:
			if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > unboundGrace {
				os.Remove(filepath.Join(fs.dir, name))
			}
		}
	}
	for name := range fs.runOf {
		if !present[name] {
			delete(fs.runOf, name)
			changed = true
		}
	}
	if changed {
		fs.saveLocked()
	}
}

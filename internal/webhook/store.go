package webhook

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// dedup remembers delivery ids for DedupWindow, in memory and in an
// append-only file that is compacted at every start.
type dedup struct {
	mu   sync.Mutex
	now  func() time.Time
	seen map[string]time.Time // route + "\x00" + id
	f    *os.File
}

type dedupRecord struct {
	Route string    `json:"route"`
	ID    string    `json:"id"`
	At    time.Time `json:"at"`
}

// maxDedup bounds the ids kept: past it, expired ones are dropped, and if
// none has expired the oldest go (a flood cannot grow memory for a day).
const maxDedup = 100_000

func openDedup(path string, now func() time.Time) (*dedup, error) {
	d := &dedup{now: now, seen: map[string]time.Time{}}
	if f, err := os.Open(path); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var r dedupRecord
			if json.Unmarshal(sc.Bytes(), &r) == nil && now().Sub(r.At) < DedupWindow {
				d.seen[r.Route+"\x00"+r.ID] = r.At
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
	for k, at := range d.seen {
		route, id, _ := strings.Cut(k, "\x00")
		enc.Encode(dedupRecord{Route: route, ID: id, At: at})
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

// add records id for route and reports whether it is new.
func (d *dedup) add(route, id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	k := route + "\x00" + id
	if at, ok := d.seen[k]; ok && now.Sub(at) < DedupWindow {
		return false
	}
	if len(d.seen) >= maxDedup {
		d.pruneLocked(now)
	}
	d.seen[k] = now
	b, _ := json.Marshal(dedupRecord{Route: route, ID: id, At: now})
	d.f.Write(append(b, '\n'))
	return true
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

// bucket is a token bucket: perMinute tokens, refilled continuously.
type bucket struct {
	mu     sync.Mutex
	rate   float64 // tokens per second
	cap    float64
	tokens float64
	last   time.Time
}

func newBucket(perMinute int, now time.Time) *bucket {
	return &bucket{rate: float64(perMinute) / 60, cap: float64(perMinute), tokens: float64(perMinute), last: now}
}

func (b *bucket) take(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.After(b.last) {
		b.tokens = min(b.cap, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

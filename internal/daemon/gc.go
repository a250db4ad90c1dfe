package daemon

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// Garbage-collector settings of the daemon process. The go-sdk's JSON
// decoder allocates a fresh buffer per message, so a proxied tools/call
// makes a lot of short-lived garbage; collecting less often (GOGC 400)
// raised broker throughput at 32 sessions in bench/ when it was set (the
// figures are in docs/benchmarks.md's history in git), and the soft memory
// limit keeps the larger heap from growing the daemon's footprint.
//
// The limit is a floor, not a ceiling: a large fleet needs more than
// 64 MiB of live memory (1,000 harnesses: about 25 MiB of heap and as much
// again of goroutine stacks), and a fixed limit under that made the
// collector run back to back (550 cycles in one start --all, 40% of the
// CPU of a stop --all, most of it handing pages back to the kernel). After
// every collection the limit is raised to leave the heap room to grow by
// headroom times its live size, but by no more than maxRoom; it never goes
// below memoryLimit.
//
// maxRoom: the room is what an idle daemon keeps of the kernel's memory
// (the scavenger returns pages down to the limit, not to the live heap).
// At 1,000 TUI harnesses (171 MiB live) twice the live size made the
// idle daemon 486 MiB; a collection per 64 MiB allocated costs that fleet
// little, and a small daemon never reaches the cap.
//
// quietRoom: a daemon that allocated less than idleAllocs in the
// quietAfter after a collection is idle, and is collected once more then;
// that collection leaves only quietRoom, so an idle fleet keeps its live
// memory and little more (the runtime's own idle collection, every 2
// minutes, leaves the room as it was). The next collection the daemon
// allocates its way to has maxRoom again. idleAllocs is small so that a
// daemon that allocates slowly but steadily is not collected twice as
// often: each collection marks the whole live heap.
const (
	gcPercent   = 400
	memoryLimit = 64 << 20
	headroom    = 2
	maxRoom     = 64 << 20
	quietRoom   = 8 << 20
	quietAfter  = 10 * time.Second
	idleAllocs  = 1 << 20
)

// TuneGC applies those settings to this process, unless the operator set
// GOGC or GOMEMLIMIT, which always win.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
		p := &gcPacer{allocs: func() uint64 { return readMem().allocs }, collect: runtime.GC}
		followHeap(func(s memSample) bool {
			debug.SetMemoryLimit(p.collected(s))
			return true
		})
	}
}

// gcPacer sets the limit after each collection and makes the one
// collection that finds the daemon idle.
type gcPacer struct {
	allocs  func() uint64 // bytes allocated so far (readMem)
	collect func()        // runtime.GC; called from a timer's goroutine
	mu      sync.Mutex
	seq     uint64      // collections seen
	armed   uint64      // seq when the timer was last armed
	since   uint64      // allocs at the last collection
	forcing bool        // the next collection is the idle one
	timer   *time.Timer // one for the daemon's life, reset, never stopped
}

// collected is called after every collection with the runtime's sample
// and returns the limit to set. After a collection the daemon allocated
// its way to, it arms a timer (fire).
func (p *gcPacer) collected(s memSample) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	quiet := p.forcing
	p.forcing = false
	p.seq++
	p.since = s.allocs
	if !quiet {
		p.armed = p.seq
		if p.timer == nil {
			p.timer = time.AfterFunc(quietAfter, p.fire)
		} else {
			p.timer.Reset(quietAfter)
		}
	}
	return memoryLimitFor(s, quiet)
}

// fire runs quietAfter after it was armed, unless a collection came
// since: it collects when the daemon allocated less than idleAllocs in
// that time, and else looks again quietAfter later.
func (p *gcPacer) fire() {
	p.mu.Lock()
	if p.seq != p.armed {
		p.mu.Unlock()
		return
	}
	allocs := p.allocs()
	idle := allocs-p.since < idleAllocs
	if idle {
		p.forcing = true
	} else {
		p.since = allocs
		p.timer.Reset(quietAfter)
	}
	p.mu.Unlock()
	if idle {
		p.collect()
	}
}

// memSample is what memoryLimitFor and gcPacer need from runtime/metrics.
type memSample struct {
	live   uint64 // the heap live after the last collection
	other  uint64 // what the limit counts beside the heap: stacks, runtime metadata
	allocs uint64 // bytes allocated on the heap so far
}

// memoryLimitFor is the soft limit for s: room for the heap to grow by
// headroom times its live size (at most maxRoom, or quietRoom when quiet)
// on top of everything else, at least memoryLimit.
func memoryLimitFor(s memSample, quiet bool) int64 {
	room := min(headroom*s.live, uint64(maxRoom))
	if quiet {
		room = min(room, quietRoom)
	}
	return int64(max(memoryLimit, s.other+s.live+room))
}

var memNames = []string{
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/gc/heap/allocs:bytes",
}

// readMem samples the runtime's memory classes.
func readMem() memSample {
	ms := make([]metrics.Sample, len(memNames))
	for i, n := range memNames {
		ms[i].Name = n
	}
	metrics.Read(ms)
	v := make([]uint64, len(ms))
	for i, m := range ms {
		if m.Value.Kind() == metrics.KindUint64 {
			v[i] = m.Value.Uint64()
		}
	}
	heap := v[2] + v[3] + v[4] + v[5]
	s := memSample{live: v[0], allocs: v[6]}
	if v[1] > heap {
		s.other = v[1] - heap
	}
	return s
}

// followHeap calls set with the runtime's memory sample after every collection, from
// the runtime's cleanup goroutine, for as long as set returns true: an
// object nothing refers to is collected by the next cycle, and its cleanup
// arms the next one.
func followHeap(set func(memSample) bool) {
	// A pointer field keeps it out of the tiny allocator, whose objects
	// may never be cleaned up.
	type cycle struct{ _ *byte }
	c := new(cycle)
	runtime.AddCleanup(c, func(struct{}) {
		if set(readMem()) {
			followHeap(set)
		}
	}, struct{}{})
}

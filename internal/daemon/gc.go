package daemon

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// Garbage-collector settings of the daemon process. The go-sdk's JSON
// decoder allocates a fresh buffer per message, so a proxied tools/call
// makes a lot of short-lived garbage; collecting less often (GOGC 400)
// nearly doubled broker throughput at 32 sessions in bench/ (see
// docs/benchmarks.md), and the soft memory limit keeps the larger heap
// from growing the daemon's footprint.
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
const (
	gcPercent   = 400
	memoryLimit = 64 << 20
	headroom    = 2
	maxRoom     = 64 << 20
)

// TuneGC applies those settings to this process, unless the operator set
// GOGC or GOMEMLIMIT, which always win.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
		followHeap(func(l int64) bool {
			debug.SetMemoryLimit(l)
			return true
		})
	}
}

// memSample is what memoryLimitFor needs from runtime/metrics.
type memSample struct {
	live  uint64 // the heap live after the last collection
	other uint64 // what the limit counts beside the heap: stacks, runtime metadata
}

// memoryLimitFor is the soft limit for s: room for the heap to grow by
// headroom times its live size (at most maxRoom) on top of everything
// else, at least memoryLimit.
func memoryLimitFor(s memSample) int64 {
	return int64(max(memoryLimit, s.other+s.live+min(headroom*s.live, maxRoom)))
}

var memNames = []string{
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
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
	s := memSample{live: v[0]}
	if v[1] > heap {
		s.other = v[1] - heap
	}
	return s
}

// followHeap calls set with memoryLimitFor after every collection, from
// the runtime's cleanup goroutine, for as long as set returns true: an
// object nothing refers to is collected by the next cycle, and its cleanup
// arms the next one.
func followHeap(set func(int64) bool) {
	// A pointer field keeps it out of the tiny allocator, whose objects
	// may never be cleaned up.
	type cycle struct{ _ *byte }
	c := new(cycle)
	runtime.AddCleanup(c, func(struct{}) {
		if set(memoryLimitFor(readMem())) {
			followHeap(set)
		}
	}, struct{}{})
}

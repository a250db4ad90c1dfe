package daemon

import (
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestScenario_TheSoftMemoryLimitMakesRoomForALargeFleet: the limit stays
// at 64 MiB for a small daemon and grows with the live heap of a large
// one, so the collector never runs back to back at a fixed limit; the room
// above the live heap stops at maxRoom, which an idle daemon keeps.
func TestScenario_TheSoftMemoryLimitMakesRoomForALargeFleet(t *testing.T) {
	for _, c := range []struct {
		s    memSample
		want int64
	}{
		{memSample{live: 4 << 20, other: 8 << 20}, memoryLimit},
		{memSample{live: 25 << 20, other: 30 << 20}, (30 + 3*25) << 20},
		{memSample{live: 0, other: 100 << 20}, 100 << 20},
		// 1,000 TUI harnesses: the room stops growing at maxRoom.
		{memSample{live: 171 << 20, other: 40 << 20}, (40 + 171 + 64) << 20},
	} {
		if got := memoryLimitFor(c.s, false); got != c.want {
			t.Errorf("memoryLimitFor(%+v) = %d MiB, want %d MiB", c.s, got>>20, c.want>>20)
		}
	}
	// The limit follows every collection, from the runtime's own
	// goroutine; the first call that returns false ends it.
	got := make(chan int64, 1)
	followHeap(func(s memSample) bool {
		got <- memoryLimitFor(s, false)
		return false
	})
	deadline := time.After(10 * time.Second)
	for {
		runtime.GC()
		select {
		case l := <-got:
			if l < memoryLimit {
				t.Fatalf("limit after a collection = %d, want at least %d", l, memoryLimit)
			}
			if s := readMem(); s.live == 0 || s.other == 0 {
				t.Fatalf("runtime/metrics sample %+v: a class is missing", s)
			}
			return
		case <-deadline:
			t.Fatal("no call after collections for 10 s")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestScenario_AnIdleFleetKeepsLittleRoomAboveItsHeap: while the daemon
// allocates, the room above the live heap stays maxRoom and nothing is
// forced; once it allocated under idleAllocs in the quietAfter after a
// collection, the pacer collects once, and that collection leaves
// quietRoom, so the scavenger hands the rest back; it is not collected
// again while it stays idle; the next collection it allocates its way to
// has maxRoom again, and a slow, steady allocator is never forced.
func TestScenario_AnIdleFleetKeepsLittleRoomAboveItsHeap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var forcedN atomic.Int32 // the pacer's timer collects from its own goroutine
		forced := func() int32 { return forcedN.Load() }
		var allocated atomic.Uint64
		p := &gcPacer{allocs: allocated.Load, collect: func() { forcedN.Add(1) }}
		fleet := func() memSample { // 1,000 idle TUI harnesses
			return memSample{live: 171 << 20, other: 40 << 20, allocs: allocated.Load()}
		}
		busy, quiet := int64((40+171+64)<<20), int64((40+171+8)<<20)
		check := func(what string, got, want int64) {
			t.Helper()
			if got != want {
				t.Fatalf("%s: limit %d MiB, want %d MiB", what, got>>20, want>>20)
			}
		}
		wait := func(d time.Duration) {
			time.Sleep(d)
			synctest.Wait()
		}
		for range 5 {
			allocated.Add(64 << 20)
			check("a collection in a busy stretch", p.collected(fleet()), busy)
			wait(time.Second)
		}
		if forced() != 0 {
			t.Fatalf("%d collections forced while busy", forced())
		}
		wait(quietAfter)
		if forced() != 1 {
			t.Fatalf("%d collections forced quietAfter after the last, want 1", forced())
		}
		check("the forced collection", p.collected(fleet()), quiet)
		wait(10 * quietAfter)
		if forced() != 1 {
			t.Fatalf("%d collections forced in all while idle, want 1", forced())
		}
		allocated.Add(8 << 20)
		check("the next collection the daemon allocated its way to", p.collected(fleet()), busy)
		// A slow, steady allocator: 2 MiB per quietAfter is not idle.
		for range 5 {
			allocated.Add(2 << 20)
			wait(quietAfter)
		}
		if forced() != 1 {
			t.Fatalf("%d collections forced in all with a steady allocator, want 1", forced())
		}
		// It stops: the next quietAfter finds it idle.
		wait(quietAfter)
		if forced() != 2 {
			t.Fatalf("%d collections forced once it stopped allocating, want 2", forced())
		}
		check("that collection", p.collected(fleet()), quiet)
		// A small daemon stays at the floor either way.
		check("a small quiet daemon", memoryLimitFor(memSample{live: 4 << 20, other: 8 << 20}, true), memoryLimit)
	})
}

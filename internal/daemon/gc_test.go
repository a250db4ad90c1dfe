package daemon

import (
	"runtime"
	"testing"
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
		if got := memoryLimitFor(c.s); got != c.want {
			t.Errorf("memoryLimitFor(%+v) = %d MiB, want %d MiB", c.s, got>>20, c.want>>20)
		}
	}
	// The limit follows every collection, from the runtime's own
	// goroutine; the first call that returns false ends it.
	got := make(chan int64, 1)
	followHeap(func(l int64) bool {
		got <- l
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

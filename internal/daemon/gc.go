package daemon

import (
	"os"
	"runtime/debug"
)

// Garbage-collector settings of the daemon process. The go-sdk's JSON
// decoder allocates a fresh buffer per message, so a proxied tools/call
// makes a lot of short-lived garbage; collecting less often (GOGC 400)
// nearly doubled broker throughput at 32 sessions in bench/ (see
// docs/benchmarks.md), and the soft memory limit keeps the larger heap
// from growing the daemon's footprint.
const (
	gcPercent   = 400
	memoryLimit = 64 << 20
)

// TuneGC applies those settings to this process, unless the operator set
// GOGC or GOMEMLIMIT, which always win.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
}

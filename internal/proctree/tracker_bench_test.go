package proctree

import (
	"testing"
	"time"
)

// BenchmarkTrackerPass is the fallback's recurring cost: one pass over
// /proc with a run registered (the daemon makes one a second while runs
// exist). The baseline, BenchmarkScan, is the bare /proc read every
// orphan-reaper pass already does on SIGCHLD.
func BenchmarkTrackerPass(b *testing.B) {
	r := NewReaper(nil)
	h, err := spawnHelper(r, "sleep", SysProcAttr())
	if err != nil {
		b.Fatal(err)
	}
	defer func() { h.cmd.Process.Kill(); h.cmd.Wait() }()
	tr := NewTracker(nil, nil, time.Hour)
	if err := tr.Register("run", h.cmd.Process.Pid); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		tr.Refresh()
	}
	b.ReportMetric(float64(len(scan(nil))), "procs")
}

func BenchmarkScan(b *testing.B) {
	for b.Loop() {
		scan(nil)
	}
	b.ReportMetric(float64(len(scan(nil))), "procs")
}

package hold

// Repeats counts the same tool call made in a row by one run's agent,
// for the loop guard (loop_guard = N, docs/design/agents.md).
type Repeats struct {
	Run  uint64
	Call string
	N    int
}

// Next is r after run made call: a new run or another call starts the
// count again at 1.
func (r Repeats) Next(run uint64, call string) Repeats {
	if r.Run != run || r.Call != call {
		return Repeats{Run: run, Call: call, N: 1}
	}
	r.N++
	return r
}

// Tripped reports whether the guard of limit (0: off) ends the run.
func (r Repeats) Tripped(limit int) bool { return limit > 0 && r.N >= limit }

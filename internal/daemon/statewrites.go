package daemon

import (
	"path/filepath"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/proctree"
	"github.com/harness-dev/harness/internal/runs"
)

// stateWrites gathers the write failures of the state dir's records for
// daemon_info: the run history and the process ledger are written from
// memory by writers of their own, which retry, so a full disk shows here
// instead of stopping a start or a stop.
func stateWrites(r *runs.Store, l *proctree.Ledger) api.StateWrites {
	w := api.StateWrites{Failures: r.WriteFailures() + l.WriteFailures(), Failing: []api.StateWriteError{}}
	if err := r.WriteError(); err != nil {
		w.Failing = append(w.Failing, api.StateWriteError{File: filepath.Base(r.Path()), Error: err.Error()})
	}
	if err := l.WriteError(); err != nil {
		w.Failing = append(w.Failing, api.StateWriteError{File: filepath.Base(l.Path()), Error: err.Error()})
	}
	return w
}

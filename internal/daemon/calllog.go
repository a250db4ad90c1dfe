package daemon

import (
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/harness-dev/harness/internal/calllog"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mask"
)

// callLogDir is where the call log lives under the state dir.
const callLogDir = "calls"

// openCallLog opens the MCP call log; applyLive sets
// call_log_args before any session can record.
func openCallLog(stateDir string, log *slog.Logger, m *mask.Masker) (*calllog.Log, error) {
	l, err := calllog.Open(filepath.Join(stateDir, callLogDir), calllog.Options{Logger: log, Mask: m.Func()})
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	return l, nil
}

func closeCallLog(l *calllog.Log, log *slog.Logger) {
	if err := l.Close(); err != nil {
		log.Error("call log close", logkey.Err, err)
	}
}

// RunOf names the run a live token was minted for, so the call log can
// say which run of a harness made a call (session.RunResolver).
func (a authority) RunOf(token string) (uint64, bool) {
	_, run, ok := a.tokens.Lookup(token)
	return run, ok
}

// metricsHandler serves the call stats and the notifier's counters (cs), with the Go runtime's and the
// process's metrics, in the Prometheus text format (GET /metrics on the
// HTTP endpoint, operator token only).
func metricsHandler(log *slog.Logger, cs ...prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(cs...)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
	})
}

package daemon

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/endpoint"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/protocol"
	"github.com/harness-dev/harness/internal/telemetry"
)

// telemetryLogEvery is the least time between two logged export failures:
// a collector that is down fails every batch.
const telemetryLogEvery = time.Minute

// startTelemetry builds the OTLP export of [telemetry], or nil when it is
// off. Its headers are resolved once, here; a problem with them keeps
// telemetry off and the daemon running, logged without their values.
func startTelemetry(c config.Telemetry, version string, runs telemetry.RunSource, log *slog.Logger) *telemetry.Telemetry {
	if !c.On() {
		return nil
	}
	vars, err := endpoint.Vars(c.EnvFile, c.Env)
	if err != nil {
		log.Error("telemetry off: env_file", logkey.Err, err)
		return nil
	}
	target, err := endpoint.Resolve(c.OTLPEndpoint, c.OTLPHeaders, func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	})
	if err != nil {
		log.Error("telemetry off: otlp_headers", logkey.Err, err)
		return nil
	}
	headers := map[string]string{}
	for k := range target.Header {
		headers[k] = target.Header.Get(k)
	}
	scrub := endpoint.Scrub(target.Secrets)
	var mu sync.Mutex
	var last time.Time
	onError := func(err error) {
		mu.Lock()
		now := time.Now()
		quiet := now.Sub(last) < telemetryLogEvery
		if !quiet {
			last = now
		}
		mu.Unlock()
		if !quiet {
			log.Warn("telemetry export failed (counted in daemon-info; logged once a minute)", logkey.Err, scrub(err.Error()))
		}
	}
	// The metric reader reports its export errors here.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(onError))
	t, err := telemetry.New(telemetry.Options{
		Endpoint:       target.URL,
		Headers:        headers,
		ServiceName:    c.ServiceName,
		Version:        version,
		Runs:           runs,
		Logger:         log,
		MetricInterval: c.MetricInterval,
		OnError:        onError,
	})
	if err != nil {
		log.Error("telemetry off", logkey.Err, scrub(err.Error()))
		return nil
	}
	log.Info("telemetry on", logkey.URL, target.URL)
	return t
}

// closeTelemetry exports what is left, bounded.
func closeTelemetry(t *telemetry.Telemetry, log *slog.Logger) {
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.Close(ctx); err != nil {
		log.Warn("telemetry: final export", logkey.Err, err)
	}
}

// telemetryRecorder is the call log with telemetry beside it: each call
// record goes to both.
type telemetryRecorder struct {
	calls interface {
		Record(api.CallRecord)
		KeepArgs() bool
	}
	tel *telemetry.Telemetry
}

func (r telemetryRecorder) Record(c api.CallRecord) {
	r.calls.Record(c)
	r.tel.Record(c)
}

func (r telemetryRecorder) KeepArgs() bool { return r.calls.KeepArgs() }

// onEvent publishes an event, and hands it to telemetry when it is on.
func onEvent(srv *protocol.Server, tel *telemetry.Telemetry) func(api.Event) {
	if tel == nil {
		return srv.Publish
	}
	return func(e api.Event) {
		srv.Publish(e)
		tel.Observe(e)
	}
}

// telemetryInfo is daemon_info's view of the export, nil while off.
func telemetryInfo(tel *telemetry.Telemetry) func() *api.TelemetryInfo {
	if tel == nil {
		return nil
	}
	return tel.Stats
}

package config

import (
	"time"

	"github.com/harness-dev/harness/internal/endpoint"
)

// Defaults and bounds of [telemetry].
const (
	DefaultTelemetryService        = "harness"
	DefaultTelemetryMetricInterval = 30 * time.Second
	MinTelemetryMetricInterval     = time.Second
)

// Telemetry is the [telemetry] table (docs/design/telemetry.md): OTLP/HTTP
// export of traces and metrics, off while OTLPEndpoint is "". Global file
// only; it takes effect at the daemon's start.
type Telemetry struct {
	// OTLPEndpoint (otlp_endpoint) is the collector's base URL,
	// http://host:4318; /v1/traces and /v1/metrics are added.
	OTLPEndpoint string
	// OTLPHeaders (otlp_headers) go with every export; values are secrets
	// with ${VAR} from EnvFile and Env, as a notifier's headers.
	OTLPHeaders map[string]string
	EnvFile     string
	Env         map[string]string
	// ServiceName (service_name) is the service.name resource attribute.
	ServiceName string
	// MetricInterval (metric_interval_s) is how often metrics are sent.
	MetricInterval time.Duration
}

// On reports whether export is configured.
func (t Telemetry) On() bool { return t.OTLPEndpoint != "" }

func (d *decoder) telemetry(v any, out *Telemetry) {
	p := []string{"telemetry"}
	t, ok := d.table(p, v)
	if !ok {
		return
	}
	out.ServiceName = DefaultTelemetryService
	out.MetricInterval = DefaultTelemetryMetricInterval
	for _, k := range sortedKeys(t) {
		kp, val := child(p, k), t[k]
		switch k {
		case "otlp_endpoint":
			if s, ok := d.str(kp, val); ok {
				if _, err := endpoint.CheckURL(s); err != nil {
					d.add(kp, "%v", err)
				}
				out.OTLPEndpoint = s
			}
		case "otlp_headers":
			out.OTLPHeaders = d.headers(kp, val)
		case "env_file":
			out.EnvFile = d.path(kp, val)
		case "env":
			out.Env = d.env(kp, val)
		case "service_name":
			if s, ok := d.str(kp, val); ok {
				if s == "" {
					d.add(kp, "must not be empty")
				}
				out.ServiceName = s
			}
		case "metric_interval_s":
			out.MetricInterval = d.seconds(kp, val, DefaultTelemetryMetricInterval)
			if out.MetricInterval < MinTelemetryMetricInterval {
				d.add(kp, "must be at least 1 second")
			}
		default:
			d.unknown(kp, val)
		}
	}
	if out.OTLPEndpoint == "" && len(t) > 0 {
		d.add(p, "otlp_endpoint is required: the collector's OTLP/HTTP URL, e.g. http://127.0.0.1:4318")
	}
	d.checkRefs(p, out.EnvFile, out.Env, out.OTLPHeaders)
}

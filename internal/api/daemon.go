package api

import "time"

// ProfileInfo is one row of `profiles`.
type ProfileInfo struct {
	Name      string   `json:"name"`
	Harnesses []string `json:"harnesses"`
	Autostart bool     `json:"autostart"`
	Active    bool     `json:"active"`
}

// ReloadResult says what a successful reload changed.
type ReloadResult struct {
	Added    []string `json:"added"`
	Removed  []string `json:"removed"`
	Changed  []string `json:"changed"`
	Warnings []string `json:"warnings"`
}

// ProjectArgs name a project by its file (up, and down from inside it) or
// by its name (down PROJECT).
type ProjectArgs struct {
	Path string `json:"path"`
	Name string `json:"name"`
}

// ProjectResult is the answer of project_up and project_down.
type ProjectResult struct {
	Project string   `json:"project"`
	Path    string   `json:"path"`
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	Changed []string `json:"changed"`
	Started []string `json:"started"`
}

// UpstreamStatus is one row of `mcp_status`.
type UpstreamStatus struct {
	Key     string `json:"key"`
	Project string `json:"project,omitempty"`
	// URL is a remote upstream's endpoint as it may be shown: without
	// userinfo, query values hidden. Absent for a process upstream.
	URL       string     `json:"url,omitempty"`
	State     string     `json:"state"`
	PID       int        `json:"pid"`
	Tools     int        `json:"tools"`
	Restarts  int        `json:"restarts"`
	LastError string     `json:"last_error"`
	NextRetry *time.Time `json:"next_retry,omitempty"`
	// Calls are the calls of this upstream's tools since the daemon started.
	Calls UpstreamCallStats `json:"calls"`
	// ToolClasses is each listed tool's class and why, excluded ones
	// included, sorted by tool name.
	ToolClasses []ToolClass `json:"tool_classes"`
}

// DaemonInfo is the answer of `daemon_info`.
type DaemonInfo struct {
	Version   string           `json:"version"`
	Proto     string           `json:"proto"`
	PID       int              `json:"pid"`
	StartedAt time.Time        `json:"started_at"`
	Uptime    string           `json:"uptime"`
	UptimeS   float64          `json:"uptime_s"`
	Paths     Paths            `json:"paths"`
	Profile   string           `json:"profile"`
	MCPURL    string           `json:"mcp_url,omitempty"`
	Warnings  []string         `json:"warnings"`
	Upstreams []UpstreamStatus `json:"upstreams"`
	CallLog   *CallLogInfo     `json:"call_log,omitempty"`
	Ownership Ownership        `json:"ownership"`
	// Notify are the [notify.*] tables' counters, by name.
	Notify []NotifyStats `json:"notify"`
	// Webhooks is the webhook listener, when [daemon] webhook_listen serves.
	Webhooks *WebhookInfo `json:"webhooks,omitempty"`
	// StateWrites says whether the state dir's records (the run history,
	// the process ledger) are being written; a full disk stops no unit,
	// the writes are retried from memory.
	StateWrites StateWrites `json:"state_writes"`
	// DashboardURL is the web dashboard's address, served on the MCP
	// HTTP listener; absent without [daemon] mcp_http.
	DashboardURL string `json:"dashboard_url,omitempty"`
	// Telemetry is the OTLP export, when [telemetry] otlp_endpoint is set.
	Telemetry *TelemetryInfo `json:"telemetry,omitempty"`
	// WebURL is the listener for people's address ([web] listen, or
	// public_url when set); WebFingerprint its certificate's SHA-256.
	WebURL         string `json:"web_url,omitempty"`
	WebFingerprint string `json:"web_fingerprint,omitempty"`
	// WebError says why the listener for people does not serve (a
	// certificate that does not load, an address taken); the rest of the
	// daemon serves on.
	WebError string `json:"web_error,omitempty"`
	// TailnetURL is the page's address on the tailnet ([web] tailnet),
	// once the node is up; TailnetError says why it is not (a refused
	// auth key, an unreachable control server, a build without tailnet
	// support). The rest of the daemon serves on either way.
	TailnetURL   string `json:"tailnet_url,omitempty"`
	TailnetError string `json:"tailnet_error,omitempty"`
}

// TelemetryInfo counts what the OTLP export sent and lost
// (docs/design/telemetry.md). Nothing waits for the collector: what it
// cannot take is dropped and counted here.
type TelemetryInfo struct {
	// Endpoint is the collector's base URL (its headers are not shown).
	Endpoint      string `json:"endpoint"`
	SpansExported uint64 `json:"spans_exported"`
	// SpansDropped found the export queue full.
	SpansDropped uint64 `json:"spans_dropped"`
	// SpansFailed were in an export the collector refused or never
	// answered.
	SpansFailed         uint64 `json:"spans_failed"`
	MetricExports       uint64 `json:"metric_exports"`
	MetricExportsFailed uint64 `json:"metric_exports_failed"`
	// EventsDropped are events and call records the telemetry goroutine
	// could not take in time.
	EventsDropped uint64 `json:"events_dropped"`
}

// StateWrites counts the failed writes of the state dir's records since
// the daemon started. A failed write is retried (with a backoff and at
// every change) until one succeeds, so Failures > 0 with Failing empty
// means the disk refused for a while and everything is written now.
type StateWrites struct {
	Failures int `json:"failures"`
	// Failing lists the files whose last write failed, with why.
	Failing []StateWriteError `json:"failing"`
}

// StateWriteError is a state file whose last write failed.
type StateWriteError struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

// Paths are the files the daemon uses.
type Paths struct {
	Config   string `json:"config"`
	Socket   string `json:"socket"`
	StateDir string `json:"state_dir"`
}

package api

import "time"

// OpNotifyTest sends a sample message through one [notify.NAME] table
// (`harness notify test NAME`, docs/design/events.md).
const OpNotifyTest = "notify_test"

// NotifyTestArgs are the arguments of notify_test.
type NotifyTestArgs struct {
	Name string `json:"name"`
}

// NotifyTestResult is the answer of notify_test: the sample was delivered
// (an error answers otherwise), after Attempts tries; Status is the
// receiver's HTTP status (0 for a command sink).
type NotifyTestResult struct {
	Name       string `json:"name"`
	Attempts   int    `json:"attempts"`
	Status     int    `json:"status,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// NotifyStats are one notifier's counters since the daemon started (they
// survive reloads): sent, failed (given up: a 4xx, or out of retries),
// dropped (its queue was full), retries, suppressed by the cooldown, and
// what waits in its queue now.
type NotifyStats struct {
	Name       string     `json:"name"`
	Sink       string     `json:"sink"` // "command" or the format of a url sink
	Sent       uint64     `json:"sent"`
	Failed     uint64     `json:"failed"`
	Dropped    uint64     `json:"dropped"`
	Retries    uint64     `json:"retries"`
	Suppressed uint64     `json:"suppressed"`
	Queued     int        `json:"queued"`
	LastError  string     `json:"last_error,omitempty"`
	LastSent   *time.Time `json:"last_sent,omitempty"`
}

// WebhookStats are one [webhook.NAME] route's counters since the daemon
// started.
type WebhookStats struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	Accepted uint64 `json:"accepted"` // verified, new, wanted: jobs triggered
	Ignored  uint64 `json:"ignored"`  // verified but filtered out by events
	Replayed uint64 `json:"replayed"` // a delivery id, or a signed body, seen before
	Rejected uint64 `json:"rejected"` // bad signature or token (401), no delivery id (400)
	Limited  uint64 `json:"limited"`  // verified, over rate_limit (429)
	// SourceLimited are requests refused (429) because their source had
	// used its budget of refusals (bad signatures, bodies too large).
	SourceLimited uint64 `json:"source_limited"`
	TooLarge      uint64 `json:"too_large"` // over max_body_bytes (413)
	Triggered     uint64 `json:"triggered"` // runs started
}

// WebhookInfo is daemon_info's view of the webhook listener.
type WebhookInfo struct {
	URL    string         `json:"url"`
	Routes []WebhookStats `json:"routes"`
}

package agent

// The generic adapter: any program harness has no adapter for. Its state
// is the busy/idle floor only (working while busy, ready while idle), and
// it has no run options, dialogs or transcripts.
func init() {
	Register(Generic, func() *Adapter { return &Adapter{Name: Generic} })
}

package agent

// Codex (@openai/codex, the `codex` command).
func init() {
	Register(&Adapter{
		Name:     Codex,
		Commands: []string{"codex"},
	})
}

package agent

// Claude Code (@anthropic-ai/claude-code, the `claude` command). What it
// shows and sends offline is in agents-offline.md; its screen rules are in
// Rules, and the argv of DESIGN §17's run options is left to Argv.
func init() {
	Register(&Adapter{
		Name:     ClaudeCode,
		Commands: []string{"claude", "claude-code"},
	})
}

package agent

// Gemini CLI (@google/gemini-cli, the `gemini` command).
func init() {
	Register(&Adapter{
		Name:     Gemini,
		Commands: []string{"gemini"},
	})
}

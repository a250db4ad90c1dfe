package agent

import "github.com/harness-dev/harness/internal/api"

// Gemini CLI (@google/gemini-cli, the `gemini` command), as 0.61.0 draws
// itself (testdata/gemini). Its dialogs are boxes with a ● cursor on
// numbered choices. Trusting a folder restarts it in the same terminal
// without clearing the screen, so the old dialog stays in view above the
// new prompt: rules read from the last occurrence of their question down.
func init() {
	latest := re(`^ > \S`)
	boxChoice := re(`^[│\s]*(?:●\s*)?\d+\.\s+(.+?)[│\s]*$`)
	Register(&Adapter{
		Name:     Gemini,
		Commands: []string{"gemini"},
		Rules: []Rule{
			{
				Name: "folder trust", State: api.AgentWaiting, WaitingFor: api.WaitingTrust,
				After:  re(`Do you trust the files in this folder\?`),
				When:   res(`Do you trust the files in this folder\?`, `\d\.\s+Trust folder`),
				Unless: res(`restarting to apply the trust changes`, `Type your message`),
				Prompt: re(`(Do you trust the files in this folder\?)`),
				Choice: boxChoice,
			},
			{
				Name: "permission", State: api.AgentWaiting, WaitingFor: api.WaitingPermission,
				After:  re(`^[│\s]*╭─`),
				When:   res(`Allow execution of|Apply this change\?|Allow (?:once|execution)`, `1\.\s+Allow once`),
				Prompt: re(`^\s*│\s*\?\s+\S+\s+(.+?)[│\s]*$`),
				Choice: boxChoice,
			},
			{
				Name: "usage limit", State: api.AgentLimited, After: latest, Message: true,
				When:   res(`(?i)usage limit reached|quota exceeded|exceeded your current quota|rate limit`),
				Choice: boxChoice,
				Until:  ParseReset,
			},
			{
				Name: "api error", State: api.AgentError, After: latest, Message: true,
				When:   res(`API Error|✕ .*(?:error|Error)`),
				Unless: res(`esc to cancel`),
			},
			{
				// Between the trust answer and the new prompt it is a new
				// process starting, not ready for input.
				Name: "restarting", State: api.AgentStarting,
				After:  re(`restarting to apply the trust changes`),
				Unless: res(`Type your message`, `esc to cancel`),
			},
			{Name: "working", State: api.AgentWorking, When: res(`esc to cancel`)},
			{Name: "prompt", State: api.AgentReady, When: res(`Type your message`)},
		},
	})
}

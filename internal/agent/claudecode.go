package agent

import "github.com/harness-dev/harness/internal/api"

// Claude Code (@anthropic-ai/claude-code, the `claude` command), as
// 2.1.328 draws itself (testdata/claude-code, captured from the real
// program against internal/agent/modelapi). Its dialogs are lists with a
// ❯ cursor; the latest turn starts at the last submitted prompt row
// ("❯ text").
func init() {
	latest := re(`^❯ \S`)
	Register(&Adapter{
		Name:     ClaudeCode,
		Commands: []string{"claude", "claude-code"},
		Wiring:   claudeWiring,
		Rules: []Rule{
			{
				Name: "folder trust", State: api.AgentWaiting, WaitingFor: api.WaitingTrust,
				When:   res(`Is this a project you created or one you trust`),
				Prompt: re(`(Is this a project you created or one you trust\?)`),
				Choice: re(`^\s*(?:❯\s*)?(No, exit|Yes, I trust this folder)\s*$`),
			},
			{
				Name: "api key", State: api.AgentWaiting, WaitingFor: api.WaitingChoice,
				When:   res(`Do you want to use this API key\?`),
				Prompt: re(`(Do you want to use this API key\?)`),
				Choice: re(`^\s*(?:❯\s*)?(Yes|No \(recommended\))\s*$`),
			},
			{
				Name: "permission", State: api.AgentWaiting, WaitingFor: api.WaitingPermission,
				After:  re(`Do you want to (?:proceed|make this edit|create|allow|run)`),
				When:   res(`^\s*(?:❯\s*)?1\.\s+Yes`),
				Prompt: re(`^\s*╌{10,}`), PromptNext: true,
				Choice: re(`^\s*(?:❯\s*)?\d+\.\s+(.+)$`),
			},
			{
				Name: "usage limit", State: api.AgentLimited, After: latest, Message: true,
				When:  res(`(?i)usage limit|limit reached|hit your (?:session |weekly )?limit|API Error.*\b429\b`),
				Until: ParseReset,
			},
			{
				Name: "api error", State: api.AgentError, After: latest, Message: true,
				When:   res(`API Error|Invalid API key|authentication_error`),
				Unless: res(`esc to interrupt`),
			},
			{Name: "working", State: api.AgentWorking, When: res(`esc to interrupt`)},
			{Name: "prompt", State: api.AgentReady, When: res(`\? for shortcuts|^❯\s*$`)},
		},
	})
}

// claudeWiring gives Claude Code harness's MCP server with --mcp-config
// (added to the user's .mcp.json and settings servers, which stay as they
// are) as an inline JSON argument: nothing is written to disk.
func claudeWiring(spec WireSpec) (Wiring, error) {
	var w Wiring
	if spec.MCP {
		w.Args = append(w.Args, jsonArg("--mcp-config", map[string]any{
			"mcpServers": map[string]any{ServerName: stdioServer(spec.Exe)},
		}))
	}
	return w, nil
}

package agent

import (
	"encoding/json"

	"github.com/harness-dev/harness/internal/api"
)

// Codex (@openai/codex, the `codex` command), as 0.169.0 draws itself
// (testdata/codex). Its input row starts with › and shows the placeholder
// "Ask Codex to do anything" while empty; submitted prompts keep the ›.
// While it streams an answer it shows no status line, so working is the
// busy/idle floor there.
func init() {
	// The last submitted prompt: a › row that is not the empty input's
	// placeholder (RE2 has no look-ahead).
	latest := re(`^› (?:[^A]|A[^s]|As[^k])`)
	Register(&Adapter{
		Name:     Codex,
		Commands: []string{"codex"},
		Wiring:   codexWiring,
		Rules: []Rule{
			{
				Name: "folder trust", State: api.AgentWaiting, WaitingFor: api.WaitingTrust,
				After:  re(`Do you trust the (?:files|contents) (?:in|of) this (?:folder|directory)`),
				When:   res(`\d\.\s+(?:Yes|Trust)`),
				Prompt: re(`(Do you trust the (?:files|contents) (?:in|of) this (?:folder|directory)\??)`),
				Choice: re(`^\s*(?:[›>]\s*)?\d+\.\s+(.+?)\s*$`),
			},
			{
				Name: "sign in", State: api.AgentWaiting, WaitingFor: api.WaitingLogin,
				After:  re(`Welcome to Codex|Sign in with ChatGPT`),
				When:   res(`\d\.\s+Sign in with ChatGPT`),
				Prompt: re(`(Choose how you want to use Codex\.?)`),
				Choice: re(`^\s*(?:[›>]\s*)?\d+\.\s+(.+?)\s*$`),
			},
			{
				Name: "permission", State: api.AgentWaiting, WaitingFor: api.WaitingPermission,
				After:  re(`Would you like to (?:run the following command|make the following edits|grant)`),
				When:   res(`^\s*(?:›\s*)?1\.\s+Yes`),
				Prompt: re(`^\s*\$ (.+)$`),
				Choice: re(`^\s*(?:›\s*)?\d+\.\s+(.+?)\s*$`),
			},
			{Name: "working", State: api.AgentWorking, When: res(`esc to interrupt`)},
			{
				Name: "usage limit", State: api.AgentLimited, After: latest, Message: true,
				When:  res(`(?i)usage limit|hit your limit|rate limit`),
				Until: ParseReset,
			},
			{
				Name: "api error", State: api.AgentError, After: latest, Message: true,
				When: res(`(?i)^\s*■ .*(?:error|unexpected status|unauthorized|stream disconnected)`),
			},
		},
	})
}

// codexWiring gives Codex harness's MCP server with -c config overrides,
// which apply to this run on top of the user's config.toml and leave it
// as it is. Codex starts an MCP server with a short list of its own
// environment only, so the server is told which variables to pass on.
func codexWiring(spec WireSpec) (Wiring, error) {
	var w Wiring
	if spec.MCP {
		key := "mcp_servers." + ServerName + "."
		w.Args = append(w.Args,
			"-c", key+"command="+tomlString(spec.Exe),
			"-c", key+`args=["mcp"]`,
			"-c", key+`env_vars=["HARNESS_MCP_TOKEN", "HARNESS_SOCKET", "HARNESS_NAME"]`,
		)
	}
	return w, nil
}

// tomlString quotes s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

package agent

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestScenario_EachAgentIsWiredInItsOwnFormat: a known agent gets
// harness's MCP server as "harness" in its own configuration format,
// merged with the user's own (never written over), with no token in any
// argument or file; mcp_wire = false and the generic adapter wire nothing.
func TestScenario_EachAgentIsWiredInItsOwnFormat(t *testing.T) {
	spec := WireSpec{Harness: "a", Exe: "/opt/harness", MCP: true}

	w, err := MustLookup(ClaudeCode).Wire(spec)
	if err != nil || len(w.Args) != 1 || !strings.HasPrefix(w.Args[0], "--mcp-config={") {
		t.Fatalf("claude-code: %+v, %v", w, err)
	}
	var mc struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(w.Args[0], "--mcp-config=")), &mc); err != nil ||
		mc.MCPServers["harness"].Command != "/opt/harness" || mc.MCPServers["harness"].Args[0] != "mcp" {
		t.Errorf("claude-code --mcp-config: %s (%v)", w.Args[0], err)
	}

	w, err = MustLookup(Codex).Wire(spec)
	joined := strings.Join(w.Args, " ")
	if err != nil || !strings.Contains(joined, `-c mcp_servers.harness.command="/opt/harness"`) ||
		!strings.Contains(joined, `mcp_servers.harness.env_vars=["HARNESS_MCP_TOKEN"`) {
		t.Errorf("codex: %q, %v", w.Args, err)
	}

	// Gemini merges the user's system settings into a file of its own.
	g := spec
	g.Dir = t.TempDir()
	g.Env = map[string]string{"GEMINI_CLI_SYSTEM_SETTINGS_PATH": "/etc/mine.json"}
	g.ReadFile = func(p string) ([]byte, error) {
		if p != "/etc/mine.json" {
			return nil, os.ErrNotExist
		}
		return []byte(`{"mcpServers":{"mine":{"command":"x"}},"ui":{"theme":"Dark"}}`), nil
	}
	w, err = geminiSettings(g)
	if err != nil || len(w.Files) != 1 || len(w.Env) != 1 || !strings.HasPrefix(w.Env[0], "GEMINI_CLI_SYSTEM_SETTINGS_PATH="+g.Dir) {
		t.Fatalf("gemini: %+v, %v", w, err)
	}
	var gs map[string]any
	if err := json.Unmarshal(w.Files[0].Data, &gs); err != nil {
		t.Fatal(err)
	}
	servers := gs["mcpServers"].(map[string]any)
	if servers["mine"] == nil || servers["harness"] == nil || gs["ui"] == nil {
		t.Errorf("gemini settings lost the user's own or lack harness: %s", w.Files[0].Data)
	}
	if !strings.Contains(string(w.Files[0].Data), `"HARNESS_MCP_TOKEN"`) {
		t.Errorf("gemini settings do not let the token variable through: %s", w.Files[0].Data)
	}
	g.ReadFile = func(string) ([]byte, error) { return []byte("{not json"), nil }
	if _, err := geminiSettings(g); err == nil {
		t.Error("a user's system settings that do not parse were written over")
	}

	off := spec
	off.MCP = false
	for _, name := range Names() {
		if w, err := MustLookup(name).Wire(off); err != nil || len(w.Args)+len(w.Env)+len(w.Files) != 0 {
			t.Errorf("%s with mcp_wire = false: %+v, %v", name, w, err)
		}
	}
	if w, _ := MustLookup(Generic).Wire(spec); len(w.Args)+len(w.Env)+len(w.Files) != 0 {
		t.Errorf("generic is wired: %+v", w)
	}
}

// TestScenario_ClaudeCodeHooksTellItsState: Claude Code's hook calls map
// to states (a prompt or a tool is working, a permission request waiting,
// the end of a turn ready) and carry its session and transcript; a payload
// that is not a JSON object is an error for that call; Claude Code is
// given its hooks as a settings layer of its own calling `harness hook`.
func TestScenario_ClaudeCodeHooksTellItsState(t *testing.T) {
	a := MustLookup(ClaudeCode)
	for _, c := range []struct {
		event, payload string
		want           HookSignal
	}{
		{"UserPromptSubmit", `{"session_id":"s1","transcript_path":"/h/.claude/projects/p/s1.jsonl","prompt":"hi"}`,
			HookSignal{State: "working", SessionID: "s1", Transcript: "/h/.claude/projects/p/s1.jsonl"}},
		{"Notification", `{"session_id":"s1","notification_type":"permission_prompt","message":"Claude needs your permission to use Bash"}`,
			HookSignal{State: "waiting", WaitingFor: "permission", Message: "Claude needs your permission to use Bash", SessionID: "s1"}},
		{"PermissionRequest", `{"tool_name":"Bash"}`, HookSignal{State: "waiting", WaitingFor: "permission", Message: "Claude needs your permission to use Bash"}},
		{"Stop", `{"session_id":"s1"}`, HookSignal{State: "ready", SessionID: "s1"}},
		{"SessionStart", `{"session_id":"s2","transcript_path":"/t"}`, HookSignal{SessionID: "s2", Transcript: "/t"}},
		{"Frobnicate", ``, HookSignal{}},
	} {
		got, err := a.ParseHook(c.event, []byte(c.payload))
		if err != nil || got != c.want {
			t.Errorf("%s %s: %+v, %v; want %+v", c.event, c.payload, got, err, c.want)
		}
	}
	for _, bad := range []string{`[1]`, `{"session_id":`, `"x"`} {
		if _, err := a.ParseHook("Stop", []byte(bad)); err == nil {
			t.Errorf("payload %s was taken", bad)
		}
	}
	if _, err := a.ParseHook("Stop", make([]byte, MaxHookPayload+1)); err == nil {
		t.Error("an oversized payload was taken")
	}
	w, err := a.Wire(WireSpec{Exe: "/opt/my harness", Hooks: true})
	if err != nil || len(w.Args) != 1 || !strings.HasPrefix(w.Args[0], "--settings={") {
		t.Fatalf("hooks wiring: %q, %v", w.Args, err)
	}
	var s struct {
		Hooks map[string][]struct {
			Hooks []struct{ Type, Command string } `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(w.Args[0], "--settings=")), &s); err != nil {
		t.Fatal(err)
	}
	if h := s.Hooks["Stop"]; len(h) != 1 || h[0].Hooks[0].Command != `'/opt/my harness' hook Stop` {
		t.Errorf("Stop hook: %+v", s.Hooks["Stop"])
	}
}

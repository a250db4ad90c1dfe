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

package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
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

// TestScenario_CodexNotifiesHarnessUnlessTheUserDoes: a Codex run gets
// `-c notify=[EXE, "hook", "notify"]` (no token in it), unless the user
// has a notify program of their own where this run's Codex reads it (its
// CODEX_HOME config, a profile, a project's .codex/config.toml above the
// workdir, a -c of the harness's args, or a config that does not parse):
// the override would replace it. hooks = false leaves it out. A call of
// it is the end of a turn, with the thread as the session, and asks for
// the turn's tool calls from the transcript.
func TestScenario_CodexNotifiesHarnessUnlessTheUserDoes(t *testing.T) {
	a := MustLookup(Codex)
	home := t.TempDir()
	work := filepath.Join(home, "src", "proj")
	files := map[string]string{}
	spec := WireSpec{Exe: "/opt/my harness", Hooks: true, Home: home, Workdir: work,
		ReadFile: func(p string) ([]byte, error) {
			if b, ok := files[p]; ok {
				return []byte(b), nil
			}
			return nil, os.ErrNotExist
		}}
	notify := func(s WireSpec) string {
		w, err := a.Wire(s)
		if err != nil {
			t.Fatal(err)
		}
		for i, arg := range w.Args {
			if strings.HasPrefix(arg, "notify=") && i > 0 && w.Args[i-1] == "-c" {
				return arg
			}
		}
		return ""
	}
	files[filepath.Join(home, ".codex", "config.toml")] = "model = \"gpt-5\"\n[profiles.fast]\nmodel = \"o3\"\n"
	if got := notify(spec); got != `notify=["/opt/my harness", "hook", "notify"]` {
		t.Errorf("notify override: %q", got)
	}
	off := spec
	off.Hooks = false
	if got := notify(off); got != "" {
		t.Errorf("hooks = false: %q", got)
	}
	for what, set := range map[string]func(){
		"config.toml":         func() { files[filepath.Join(home, ".codex", "config.toml")] = "notify = [\"notify-send\"]\n" },
		"a profile":           func() { files[filepath.Join(home, ".codex", "config.toml")] = "[profiles.x]\nnotify = [\"y\"]\n" },
		"a project":           func() { files[filepath.Join(home, "src", ".codex", "config.toml")] = "notify = [\"z\"]\n" },
		"a config not parsed": func() { files[filepath.Join(home, ".codex", "config.toml")] = "notify = [\n" },
	} {
		clear(files)
		set()
		if got := notify(spec); got != "" {
			t.Errorf("the user's notify in %s was replaced: %q", what, got)
		}
	}
	clear(files)
	for _, args := range [][]string{{"-c", "notify=[\"mine\"]"}, {"--config=notify=[]"}, {"-cnotify=[]"}} {
		s := spec
		s.Args = args
		if got := notify(s); got != "" {
			t.Errorf("the user's notify in args %q was replaced: %q", args, got)
		}
	}

	sig, err := a.ParseHook("notify", []byte(`{"type":"agent-turn-complete","thread-id":"th-1","turn-id":"tu-1","cwd":"/w","input-messages":["hi"],"last-assistant-message":"done"}`))
	if err != nil || sig != (HookSignal{State: "ready", TranscriptTools: true}) { // thread-id is no resumable session
		t.Errorf("agent-turn-complete: %+v, %v", sig, err)
	}
	if sig, err := a.ParseHook("notify", []byte(`{"type":"something-new","thread-id":"th-1"}`)); err != nil || sig.State != "" || sig.SessionID != "" {
		t.Errorf("an unknown notification: %+v, %v", sig, err)
	}
	if _, err := a.ParseHook("notify", []byte(`[1]`)); err == nil {
		t.Error("a payload that is no object was taken")
	}
}

// TestScenario_GeminiHooksGoInItsSettingsBesideTheUsers: Gemini CLI's
// system settings file of harness's own gets harness's hooks (each calling
// `harness hook EVENT`) after the user's own hooks of the same event, which
// stay; hooks = false leaves them out (and with mcp_wire = false too, no
// file at all). Its hook calls map to states and carry the session, the
// transcript and the tool call for the loop guard.
func TestScenario_GeminiHooksGoInItsSettingsBesideTheUsers(t *testing.T) {
	spec := WireSpec{Exe: "/opt/my harness", Hooks: true, Dir: t.TempDir(),
		ReadFile: func(string) ([]byte, error) {
			return []byte(`{"hooks":{"AfterAgent":[{"hooks":[{"type":"command","command":"my-notifier"}]}]},"hooksConfig":{"disabled":["x"]}}`), nil
		}}
	w, err := geminiSettings(spec)
	if err != nil || len(w.Files) != 1 {
		t.Fatalf("gemini: %+v, %v", w, err)
	}
	var s struct {
		MCPServers map[string]any `json:"mcpServers"`
		Hooks      map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type, Command string
				Timeout       int `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
		HooksConfig map[string]any `json:"hooksConfig"`
	}
	if err := json.Unmarshal(w.Files[0].Data, &s); err != nil {
		t.Fatal(err)
	}
	if s.MCPServers["harness"] != nil || s.HooksConfig["disabled"] == nil {
		t.Errorf("mcp_wire = false still wires the server, or the user's settings are lost: %s", w.Files[0].Data)
	}
	after := s.Hooks["AfterAgent"]
	if len(after) != 2 || after[0].Hooks[0].Command != "my-notifier" || after[1].Hooks[0].Command != `'/opt/my harness' hook AfterAgent` {
		t.Errorf("AfterAgent hooks: %+v", after)
	}
	for _, ev := range []string{"SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "Notification"} {
		if h := s.Hooks[ev]; len(h) != 1 || h[0].Hooks[0].Command != `'/opt/my harness' hook `+ev || h[0].Hooks[0].Type != "command" {
			t.Errorf("%s hooks: %+v", ev, h)
		}
	}
	if s.Hooks["BeforeTool"][0].Matcher != "*" {
		t.Errorf("BeforeTool matcher %q", s.Hooks["BeforeTool"][0].Matcher)
	}
	if strings.Contains(string(w.Files[0].Data), "TOKEN=") {
		t.Errorf("a token value in the settings: %s", w.Files[0].Data)
	}
	off := spec
	off.Hooks = false
	if w, err := geminiSettings(off); err != nil || strings.Contains(string(w.Files[0].Data), "hook ") {
		t.Errorf("hooks = false: %s, %v", w.Files[0].Data, err)
	}
	if w, err := MustLookup(Gemini).Wire(WireSpec{Exe: "/x", Dir: t.TempDir()}); err != nil || len(w.Files) != 0 {
		t.Errorf("neither mcp_wire nor hooks: %+v, %v", w, err)
	}

	a := MustLookup(Gemini)
	base := `"session_id":"g1","transcript_path":"/h/.gemini/tmp/p/chats/session-1.jsonl"`
	for _, c := range []struct {
		event, payload string
		want           HookSignal
	}{
		{"SessionStart", `{` + base + `,"source":"startup"}`, HookSignal{SessionID: "g1", Transcript: "/h/.gemini/tmp/p/chats/session-1.jsonl"}},
		{"BeforeAgent", `{` + base + `,"prompt":"hi"}`, HookSignal{State: "working", SessionID: "g1", Transcript: "/h/.gemini/tmp/p/chats/session-1.jsonl"}},
		{"BeforeTool", `{"session_id":"g1","tool_name":"run_shell_command","tool_input":{"command":"ls"}}`,
			HookSignal{State: "working", SessionID: "g1", Tool: `run_shell_command {"command":"ls"}`}},
		{"Notification", `{"session_id":"g1","notification_type":"ToolPermission","message":"Tool Shell requires execution","details":{"type":"exec","command":"touch x"}}`,
			HookSignal{State: "waiting", WaitingFor: "permission", Message: "touch x", SessionID: "g1"}},
		{"AfterAgent", `{"session_id":"g1","prompt_response":"done"}`, HookSignal{State: "ready", SessionID: "g1"}},
	} {
		got, err := a.ParseHook(c.event, []byte(c.payload))
		if err != nil || got != c.want {
			t.Errorf("%s %s: %+v, %v; want %+v", c.event, c.payload, got, err, c.want)
		}
	}
}

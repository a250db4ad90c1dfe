package agent

import (
	"encoding/json"
	"fmt"
)

// WireSpec is what the daemon tells an adapter about one harness so that
// its agent finds harness's own MCP server and calls `harness hook`
// (docs/design/agents.md, "MCP wiring" and hooks). Nothing in it is a secret: the run's
// token reaches `harness mcp` and `harness hook` in their environment
// (HARNESS_MCP_TOKEN, inherited from the agent), never through a file or
// an argument.
type WireSpec struct {
	// Harness is the harness's name.
	Harness string
	// Exe is the absolute path of the harness binary the agent launches.
	Exe string
	// MCP wires `Exe mcp` in as the agent's MCP server "harness"
	// (mcp_wire).
	MCP bool
	// Hooks installs the agent's hook configuration calling `Exe hook`.
	Hooks bool
	// Dir is a directory harness owns for this harness
	// (STATE/agents/NAME): an adapter whose agent reads its wiring only
	// from a file writes it there (Wiring.Files), never into the user's
	// own files.
	Dir string
	// Home and Workdir are the HOME and the directory the agent runs
	// with, and Args the harness's own args: for an adapter that must
	// find the user's own settings (Codex's notify).
	Home, Workdir string
	Args          []string
	// Env is the harness's configured environment (env table, env_file
	// and the daemon's), for an adapter that must find the user's own
	// settings to merge with.
	Env map[string]string
	// ReadFile reads a user's file to merge with (nil: none can be read).
	ReadFile func(path string) ([]byte, error)
}

// Wiring is what a run of the agent gets so that it talks to harness.
type Wiring struct {
	// Args go before the harness's own args (options the agent takes
	// anywhere, in their --flag=value form so that a variadic flag does
	// not swallow the user's arguments).
	Args []string
	// Env is added to the run's environment (KEY=VALUE).
	Env []string
	// Files are written (0600, under WireSpec.Dir) before the run
	// starts.
	Files []File
}

// File is one file of a Wiring.
type File struct {
	Path string // absolute, under WireSpec.Dir
	Data []byte
}

// ServerName is the name of harness's own MCP server in an agent's
// configuration: its tools reach the model as mcp__harness__harness_list
// (Claude Code), harness__harness_list or harness_list (others).
const ServerName = "harness"

// Wire returns the wiring of one run of the agent for spec; the zero
// Wiring when the adapter has none or spec asks for nothing.
func (a *Adapter) Wire(spec WireSpec) (Wiring, error) {
	if a.Wiring == nil || (!spec.MCP && !spec.Hooks) || spec.Exe == "" {
		return Wiring{}, nil
	}
	w, err := a.Wiring(spec)
	if err != nil {
		return Wiring{}, fmt.Errorf("agent %s: wiring: %w", a.Name, err)
	}
	return w, nil
}

// stdioServer is the MCP server entry that launches `exe mcp`. The
// socket and the token come from the agent's environment.
func stdioServer(exe string) map[string]any {
	return map[string]any{"type": "stdio", "command": exe, "args": []string{"mcp"}}
}

// jsonArg renders v as the value of a --flag=JSON argument.
func jsonArg(flag string, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // our own maps
	}
	return flag + "=" + string(b)
}

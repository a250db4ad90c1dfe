package config

import (
	"bytes"
	"fmt"

	"github.com/BurntSushi/toml"
)

// Scratch builds the table of a scratch harness (docs/design/agents.md, `harness
// run`): the program, its arguments and directory, restart = "no", every
// other key at its default, validated like a harness of the config file
// (the name's characters, the agent inferred from cmd).
func Scratch(name, cmd string, args []string, workdir string) (*Harness, error) {
	if cmd == "" {
		return nil, fmt.Errorf("a scratch harness needs a command")
	}
	if !harnessNameRE.MatchString(name) {
		return nil, fmt.Errorf("harness name %q: use letters, digits, '-' and '_'", name)
	}
	t := map[string]any{"cmd": cmd, "restart": string(RestartNo)}
	if len(args) > 0 {
		t["args"] = args
	}
	if workdir != "" {
		t["workdir"] = workdir
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(map[string]any{"harness": map[string]any{name: t}}); err != nil {
		return nil, fmt.Errorf("scratch harness %s: %w", name, err)
	}
	cfg, err := Parse("harness run", buf.Bytes())
	if err != nil {
		return nil, err
	}
	h, ok := cfg.Harnesses[name]
	if !ok {
		return nil, fmt.Errorf("scratch harness %s: not built", name)
	}
	return h, nil
}

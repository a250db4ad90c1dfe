package main

import (
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/protocol"
)

// snippetSocket is the socket a stdio snippet must carry as HARNESS_SOCKET:
// "" when it is the default, which `harness mcp` finds by itself; otherwise
// its absolute path, since the client starts the bridge from anywhere.
func snippetSocket(g *globals) string {
	s := g.socketPath()
	if def, _, _ := protocol.DefaultPaths(); s == def {
		return ""
	}
	if abs, err := filepath.Abs(s); err == nil {
		s = abs
	}
	return s
}

// selfCommand is how printed commands name this binary: "harness" when that
// is what PATH finds, else the executable's own path, shell-quoted. Under
// `go run ./cmd/harness demo` there is no harness on PATH, and the binary
// go run built lives as long as the demo runs.
func selfCommand(exe string) string {
	if onPath, err := exec.LookPath("harness"); err == nil && config.SameFile(onPath, exe) {
		return "harness"
	}
	return shellQuote(exe)
}

// shellQuote returns s as one POSIX shell word.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+=:@%,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

//go:build interop

package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTS_BrokerWithFilesystem puts @modelcontextprotocol/server-filesystem
// behind the broker, limited to one directory, and drives it with the
// TypeScript client through `harness mcp`: a read inside the allowed
// directory works, a read outside it is the upstream's own refusal, named
// after the upstream, and the session goes on.
func TestTS_BrokerWithFilesystem(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("hello from the shared filesystem server\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("not for you\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFleet(t, fmt.Sprintf("[mcp.fs]\ncmd = %q\nargs = [%q]\n", bin("mcp-server-filesystem"), root))
	f.waitUpstreams("fs")
	c, steps := runTS(t,
		connectStep("a", f.bridge()),
		opStep("a", "callTool", "name", "fs__read_text_file", "args", map[string]any{"path": filepath.Join(root, "notes.txt")}),
		opStep("a", "callTool", "name", "fs__read_text_file", "args", map[string]any{"path": outside}),
		opStep("a", "callTool", "name", "fs__list_directory", "args", map[string]any{"path": root}),
	)
	c.must(steps[0], nil)
	var read toolResult
	c.must(steps[1], &read)
	if read.IsError || !strings.Contains(read.text(), "hello from the shared filesystem server") {
		t.Fatalf("fs__read_text_file inside the root: %+v\n%s", read, c.transcript())
	}
	var refused toolResult
	c.must(steps[2], &refused)
	if !refused.IsError || !strings.Contains(refused.text(), "upstream fs") || strings.Contains(refused.text(), "not for you") {
		t.Fatalf("a read outside the allowed directory must be the upstream's refusal, naming it: %+v\n%s", refused, c.transcript())
	}
	var list toolResult
	c.must(steps[3], &list)
	if list.IsError || !strings.Contains(list.text(), "notes.txt") {
		t.Fatalf("fs__list_directory after a refusal: %+v\n%s", list, c.transcript())
	}
}

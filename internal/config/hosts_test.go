package config

import (
	"strings"
	"testing"
)

// TestScenario_HostTablesAreCheckedWithTheirLines: a [host.NAME] with a
// non-ssh address, no ssh, the reserved name "local", a name given twice
// or an unknown key is refused at its file:line; a good one loads with
// its identity expanded.
func TestScenario_HostTablesAreCheckedWithTheirLines(t *testing.T) {
	for _, tt := range []struct {
		name, src, want string
	}{
		{"http url", "[host.box]\nssh = 'https://box'\n", "harness.toml:2: host.box.ssh: not an ssh:// address: https://box (want ssh://[user@]host[:port])"},
		{"no host", "[host.box]\nssh = 'ssh://'\n", "harness.toml:2: host.box.ssh: no host in ssh://"},
		{"path", "[host.box]\nssh = 'ssh://me@box/tmp'\n", "host.box.ssh: a path, query or fragment is not allowed"},
		{"password", "[host.box]\nssh = 'ssh://me:pw@box'\n", "a password is not allowed"},
		{"missing ssh", "\n[host.box]\nidentity = '/k'\n", "harness.toml:2: host.box: ssh is missing"},
		{"local reserved", "[host.local]\nssh = 'ssh://box'\n", `harness.toml:1: host.local: the name "local" is this machine's own fleet`},
		{"bad name", "[host.'a.b']\nssh = 'ssh://box'\n", `invalid host name "a.b"`},
		{"duplicate", "[host.box]\nssh = 'ssh://box'\n[host.box]\nssh = 'ssh://box2'\n", "harness.toml:3"},
		{"relative socket", "[host.box]\nssh = 'ssh://box'\nsocket = 'run/h.sock'\n", "harness.toml:3: host.box.socket: want an absolute path"},
		{"unknown key", "[host.box]\nssh = 'ssh://box'\ngrant = 'read'\n", "harness.toml:3: host.box.grant: unknown key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("harness.toml", []byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
	t.Setenv("HOME", "/home/me")
	cfg, err := Parse("harness.toml", []byte("[host.box]\nssh = 'ssh://me@box:2222'\nidentity = '~/.ssh/box'\nsocket = '/run/h.sock'\nnotify = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := cfg.Hosts["box"]
	if h == nil || h.SSH != "ssh://me@box:2222" || h.Identity != "/home/me/.ssh/box" || h.Socket != "/run/h.sock" || !h.Notify || h.Name != "box" {
		t.Fatalf("host = %+v", h)
	}
}

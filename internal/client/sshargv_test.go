package client

import (
	"slices"
	"strings"
	"testing"
)

// TestScenario_AHostsKeyAndSocketReachTheSSHCommandLine: a [host.NAME]
// identity is the one key ssh offers, and its socket is the remote
// bridge's; without them the command line is as before.
func TestScenario_AHostsKeyAndSocketReachTheSSHCommandLine(t *testing.T) {
	t.Setenv(SSHCommandEnv, "ssh -F /dev/null")
	t.Setenv(RemoteBinaryEnv, "")
	tg, err := parseSSH("ssh://me@box:2222")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(sshArgv(tg, SSHOptions{Identity: "/k/id", Socket: "/run/h.sock"}), " ")
	want := "ssh -F /dev/null -T -o BatchMode=yes -i /k/id -o IdentitiesOnly=yes -p 2222 -- me@box harness --socket /run/h.sock bridge"
	if got != want {
		t.Fatalf("argv\n got %s\nwant %s", got, want)
	}
	if plain := sshArgv(tg, SSHOptions{}); !slices.Equal(plain[len(plain)-4:], []string{"--", "me@box", "harness", "bridge"}) || slices.Contains(plain, "-i") {
		t.Fatalf("argv without options: %v", plain)
	}
}

package client_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/protocol"
)

// A 1.0 daemon knows no attach mode and refuses the hello as a bad
// argument; the client says what that means.
func TestDialAttach_DaemonThatPredatesAttach(t *testing.T) {
	sock := fakeDaemon(t, protocol.FrameError, `{"code":"invalid_argument","message":"hello mode \"attach\": want \"control\" or \"mcp\""}`)
	_, err := client.DialAttach(testCtx(t), sock, api.AttachArgs{Name: "web"})
	if !errors.Is(err, errcode.ErrVersionMismatch) || errcode.Of(err) != errcode.VersionMismatch ||
		!strings.Contains(err.Error(), "does not serve attach, which needs protocol 1.2") ||
		!strings.Contains(err.Error(), "restart the daemon") {
		t.Fatalf("DialAttach to a 1.0 daemon: %v (code %s)", err, errcode.Of(err))
	}
	// Other refusals keep their code.
	sock = fakeDaemon(t, protocol.FrameError, `{"code":"not_running","message":"web is not running"}`)
	if _, err := client.DialAttach(testCtx(t), sock, api.AttachArgs{Name: "web"}); errcode.Of(err) != errcode.NotRunning {
		t.Fatalf("DialAttach to a stopped harness: %v", err)
	}
}

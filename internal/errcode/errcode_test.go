package errcode

import (
	"errors"
	"fmt"
	"testing"
)

func TestCodesSurviveWrappingAndTheWire(t *testing.T) {
	err := fmt.Errorf("control: describe: %w", Errorf(UnknownHarness, "no harness named %q", "x"))
	if Of(err) != UnknownHarness || !errors.Is(err, ErrUnknownHarness) {
		t.Fatalf("wrapped: %v -> %s", err, Of(err))
	}
	body := BodyOf(err)
	remote := &Remote{Code: body.Code, Message: body.Message}
	if Of(remote) != UnknownHarness || !errors.Is(remote, ErrUnknownHarness) || errors.Is(remote, ErrNotPermitted) {
		t.Fatalf("remote: %+v", remote)
	}
	if Of(errors.New("plain")) != Internal || Of(nil) != "" {
		t.Fatal("an error without a code is internal; nil has none")
	}
	if SentinelFor("no-such-code") != ErrInternal {
		t.Fatal("unknown codes map to internal")
	}
}

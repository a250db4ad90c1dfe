package errcode

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
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

func TestQuoteAndClipBoundWhatTheyEcho(t *testing.T) {
	if got := Quote("gitea"); got != `"gitea"` {
		t.Errorf("short: %s", got)
	}
	big := strings.Repeat("é", 1<<20) // 2 MiB, every rune two bytes
	q := Quote(big)
	if len(q) > QuoteMax+40 || !strings.Contains(q, "(2097152 bytes)") || !utf8.ValidString(q) {
		t.Errorf("long: %d bytes: %s", len(q), q)
	}
	c := Clip("validating: "+big, 100)
	if len(c) > 140 || !strings.Contains(c, "more bytes)") || !utf8.ValidString(c) {
		t.Errorf("clip: %d bytes", len(c))
	}
	if Clip("short", 100) != "short" {
		t.Error("clip changed a short message")
	}
}

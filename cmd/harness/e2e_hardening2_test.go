package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestScenario_AnUnknownNameIsAnsweredWithTheNamesThereAre: a mistyped
// name gets unknown_harness with up to ten of the names there are (harnesses
// and upstreams, in order) and how many more, or that there are none.
func TestScenario_AnUnknownNameIsAnsweredWithTheNamesThereAre(t *testing.T) {
	var cfg strings.Builder
	for i := range 12 {
		fmt.Fprintf(&cfg, "[harness.h%02d]\ncmd = \"sleep\"\nargs = [\"1000\"]\n", i)
	}
	f := newFleet(t, cfg.String())
	b := f.jsonError("describe", "nope")
	code, msg := string(b.Code), b.Message
	want := `no harness named "nope" (harnesses: h00, h01, h02, h03, h04, h05, h06, h07, h08, h09 and 2 more)`
	if code != "unknown_harness" || !strings.Contains(msg, want) {
		t.Errorf("describe nope: %s %q, want unknown_harness %q", code, msg, want)
	}
	_, errOut, _ := f.run("stop", "h0")
	if !strings.Contains(errOut, "h00, h01") {
		t.Errorf("stop h0: %q names no harness", errOut)
	}

	e := newFleet(t, "")
	if b := e.jsonError("describe", "nope"); b.Code != "unknown_harness" || !strings.Contains(b.Message, "there are no harnesses") {
		t.Errorf("an empty fleet: %+v", b)
	}
}

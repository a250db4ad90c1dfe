package main

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
)

// opsWithoutVerb are control operations no CLI verb calls, each with the
// reason. (Every op has a verb today; an op added without one must say
// here why.)
var opsWithoutVerb = map[string]string{}

// TestEveryOpHasAVerb holds the CLI to the wire: each op of api.Ops is
// called by a verb (its callsOps annotation) or listed above with a reason,
// and no verb claims an op that does not exist.
func TestEveryOpHasAVerb(t *testing.T) {
	claimed := map[string][]string{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if ops := c.Annotations[opsAnnotation]; ops != "" {
			for _, op := range strings.Split(ops, ",") {
				claimed[op] = append(claimed[op], c.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(&globals{}, io.Discard, io.Discard))
	for _, op := range api.Ops() {
		_, excused := opsWithoutVerb[op]
		switch {
		case len(claimed[op]) == 0 && !excused:
			t.Errorf("op %q has no CLI verb and no stated reason in opsWithoutVerb", op)
		case len(claimed[op]) > 0 && excused:
			t.Errorf("op %q has a verb (%v) but is listed in opsWithoutVerb", op, claimed[op])
		}
	}
	for op, verbs := range claimed {
		if !slices.Contains(api.Ops(), op) {
			t.Errorf("verbs %v call %q, which is not in api.Ops", verbs, op)
		}
	}
}

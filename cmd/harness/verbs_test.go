package main

import (
	"fmt"
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
	for _, p := range verbProblems(newRoot(&globals{}, io.Discard, io.Discard), api.Ops(), opsWithoutVerb) {
		t.Error(p)
	}
}

// TestScenario_AnOpWithoutAVerbFails shows the check above catches an op
// no verb calls, and an excuse for an op that has a verb.
func TestScenario_AnOpWithoutAVerbFails(t *testing.T) {
	root := newRoot(&globals{}, io.Discard, io.Discard)
	ops := append(api.Ops(), "frobnicate")
	if p := verbProblems(root, ops, opsWithoutVerb); len(p) != 1 || !strings.Contains(p[0], `"frobnicate"`) {
		t.Errorf("an op without a verb: %v", p)
	}
	if p := verbProblems(root, api.Ops(), map[string]string{api.OpList: "none"}); len(p) != 1 {
		t.Errorf("an excused op with a verb: %v", p)
	}
}

func verbProblems(root *cobra.Command, ops []string, excuses map[string]string) []string {
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
	walk(root)
	var problems []string
	for _, op := range ops {
		_, excused := excuses[op]
		switch {
		case len(claimed[op]) == 0 && !excused:
			problems = append(problems, fmt.Sprintf("op %q has no CLI verb and no stated reason in opsWithoutVerb", op))
		case len(claimed[op]) > 0 && excused:
			problems = append(problems, fmt.Sprintf("op %q has a verb (%v) but is listed in opsWithoutVerb", op, claimed[op]))
		}
	}
	for op, verbs := range claimed {
		if !slices.Contains(ops, op) {
			problems = append(problems, fmt.Sprintf("verbs %v call %q, which is not in api.Ops", verbs, op))
		}
	}
	return problems
}

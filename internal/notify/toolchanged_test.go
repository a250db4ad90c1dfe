package notify

import (
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
)

// TestScenario_ChangedUpstreamToolIsANotification: the broker's
// tool_changed event becomes a tool_changed occurrence whose actions are
// the diff and the approval.
func TestScenario_ChangedUpstreamToolIsANotification(t *testing.T) {
	if !Relevant(api.EventToolChanged) {
		t.Fatal("tool_changed is not relevant to the notifier")
	}
	msg := "tool search of upstream gh changed (description) and is quarantined until approved"
	occ := NewDetector().Next(api.Event{Kind: api.EventToolChanged, Unit: "mcp.gh", Message: msg}, false)
	if len(occ) != 1 || occ[0].Event != config.NotifyToolChanged || occ[0].Reason != msg {
		t.Fatalf("occurrences %+v", occ)
	}
	acts := actions(config.NotifyToolChanged, "mcp.gh", nil, "", "")
	if len(acts) != 2 || !strings.Contains(acts[0].Command, "harness mcp pins gh --diff") || !strings.Contains(acts[1].Command, "harness mcp approve gh") {
		t.Fatalf("actions %+v", acts)
	}
}

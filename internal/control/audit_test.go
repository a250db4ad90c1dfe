package control

import (
	"encoding/json"
	"testing"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// TestScenario_AnAuditEntryNamesTheTargetNeverAnArgumentsValue: the
// target is read from the naming fields alone: a send's text, a new
// harness's prompt are never in it.
func TestScenario_AnAuditEntryNamesTheTargetNeverAnArgumentsValue(t *testing.T) {
	for _, c := range []struct {
		args any
		want string
	}{
		{api.SendArgs{Name: "a", Text: "sk-secret"}, "a"},
		{api.NewArgs{Name: "n", Prompt: "sk-secret", Cmd: "sh"}, "n"},
		{api.NamesArgs{Names: []string{"a", "b"}}, "a,b"},
		{api.NamesArgs{All: true}, "all"},
		{api.NoArgs{}, ""},
	} {
		raw, _ := json.Marshal(c.args)
		if got := auditTarget(raw); got != c.want {
			t.Errorf("target of %s = %q, want %q", raw, got, c.want)
		}
	}
	if !audited(api.OpSend) || !audited(api.OpNew) || audited(api.OpList) || audited(api.OpAudit) || audited("nope") {
		t.Error("audited: write and input ops only")
	}
	if got := outcome(errcode.Errorf(errcode.NotRunning, "x")); got != string(errcode.NotRunning) {
		t.Errorf("outcome %q", got)
	}
}

package api

import "testing"

// TestScenario_EachDoorNamesItsActor: a caller without Door and Actor is
// named by its kind; a door that knows more says so.
func TestScenario_EachDoorNamesItsActor(t *testing.T) {
	for _, c := range []struct {
		caller Caller
		door   Door
		actor  string
	}{
		{Caller{Kind: Operator}, DoorCLI, "cli:1000"},
		{Caller{Kind: Session, Harness: "boss"}, DoorMCP, "harness:boss"},
		{Caller{Kind: Dashboard}, DoorPage, "token:operator"},
		{Caller{Kind: Dashboard, Door: DoorPage, Actor: "token:ab12"}, DoorPage, "token:ab12"},
		{Caller{Kind: Operator, Door: DoorSSH, Actor: "ssh:laptop"}, DoorSSH, "ssh:laptop"},
	} {
		if d, a := c.caller.AuditDoor(), c.caller.AuditActor(1000); d != c.door || a != c.actor {
			t.Errorf("%+v: door %s actor %s, want %s %s", c.caller, d, a, c.door, c.actor)
		}
	}
}

package bridge

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// TestScenario_ABridgePairsDevicesWithinItsOwnGrant: an SSH key's bridge
// may pair a device with no class the key lacks, the default grant
// (read, input) included.
func TestScenario_ABridgePairsDevicesWithinItsOwnGrant(t *testing.T) {
	grant := func(cs ...string) api.Grant {
		g, err := api.ParseGrant(cs)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	args := func(cs ...string) json.RawMessage {
		b, _ := json.Marshal(api.PairArgs{Grant: cs})
		return b
	}
	for _, tt := range []struct {
		name  string
		key   api.Grant
		args  json.RawMessage
		allow bool
	}{
		{"read-only key", grant("read"), args("read"), false},
		{"write key, default grant", grant("read", "write"), args(), false},
		{"write key, read device", grant("read", "write"), args("read"), true},
		{"full key, default grant", grant("read", "write", "input"), nil, true},
		{"write,input key, write device", grant("write", "input"), args("read", "write"), false},
	} {
		err := check(tt.key, api.OpPair, tt.args)
		if tt.allow != (err == nil) || (err != nil && !errors.Is(err, errcode.ErrNotPermitted)) {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	if err := check(grant("read"), api.OpDevices, nil); err != nil {
		t.Errorf("devices with read: %v", err)
	}
}

// TestScenario_ABridgeTellsTheClientItsKeysGrant: the welcome a control
// client gets through the bridge says the key's classes, and keeps what
// the daemon said.
func TestScenario_ABridgeTellsTheClientItsKeysGrant(t *testing.T) {
	g, err := api.ParseGrant([]string{"read", "input"})
	if err != nil {
		t.Fatal(err)
	}
	out := stampGrant([]byte(`{"proto":"1.2","version":"v","pid":7}`), g)
	var w struct {
		Proto   string   `json:"proto"`
		PID     int      `json:"pid"`
		Bridged bool     `json:"bridged"`
		Grant   []string `json:"grant"`
	}
	if err := json.Unmarshal(out, &w); err != nil || w.Proto != "1.2" || w.PID != 7 || !w.Bridged || len(w.Grant) != 2 {
		t.Fatalf("welcome %s: %+v %v", out, w, err)
	}
	if got := stampGrant([]byte("not json"), g); string(got) != "not json" {
		t.Fatalf("garbage welcome changed: %s", got)
	}
}

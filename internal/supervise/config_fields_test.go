package supervise

import (
	"reflect"
	"testing"
	"time"
)

// needsRestart classifies every UnitConfig field: true when a change only
// takes effect at the next spawn (spawnEqual compares it, and describe's
// config_changed says so), false when it applies at once or is not about
// the process. A new field must be added here, and spawnEqual must agree.
var needsRestart = map[string]bool{
	"Name":         false, // identity: a rename is a remove and an add
	"Kind":         true,
	"Cmd":          true,
	"Args":         true,
	"Dir":          true,
	"EnvFile":      true,
	"Env":          true,
	"ExtraEnv":     true,
	"Restart":      false, // the policy applies at the next exit
	"RestartDelay": false,
	"StopGrace":    false, // applies at the next stop
	"Cols":         true,
	"Rows":         true,
	"IdleAfter":    false, // "It applies at once"
	"URL":          true,
	"Headers":      true,
	"Timeout":      false, // "It applies from the next spawn" by itself, no restart needed
	"Resources":    true,
	"Agent":        false, // the tracker switches adapter at once (actor's update)
	"AgentRun":     true,  // the adapter's argv of the next spawn
	"Sandbox":      true,  // the shim and namespaces of the next spawn
}

// TestScenario_EveryUnitConfigFieldIsClassified holds UnitConfig, the
// classification above and spawnEqual together by reflection: changing a
// field flips spawnEqual exactly when it needs a restart, and clone copies
// every slice and map.
func TestScenario_EveryUnitConfigFieldIsClassified(t *testing.T) {
	base := UnitConfig{Name: "u", Kind: KindHarness, Cmd: "sh", Args: []string{"-c", "x"}, Dir: "/tmp",
		EnvFile: "/e", Env: map[string]string{"A": "1"}, ExtraEnv: []string{"B=2"}, Restart: RestartNo,
		RestartDelay: time.Second, StopGrace: time.Second, Cols: 80, Rows: 24, IdleAfter: time.Second,
		URL: "http://x", Headers: map[string]string{"H": "v"}, Timeout: time.Minute}
	base.Resources.TasksMax = 10
	rt := reflect.TypeFor[UnitConfig]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		restart, ok := needsRestart[f.Name]
		if !ok {
			t.Errorf("UnitConfig.%s is not classified in needsRestart", f.Name)
			continue
		}
		changed := base.clone()
		if !mutate(reflect.ValueOf(&changed).Elem().Field(i)) {
			t.Errorf("UnitConfig.%s: the test cannot change a %s", f.Name, f.Type)
			continue
		}
		if got := !spawnEqual(base, changed); got != restart {
			t.Errorf("UnitConfig.%s: spawnEqual says restart=%v, classified %v", f.Name, got, restart)
		}
	}
	for name := range needsRestart {
		if _, ok := rt.FieldByName(name); !ok {
			t.Errorf("needsRestart names %s, which UnitConfig no longer has", name)
		}
	}
	// clone: a change to the copy's slices and maps never reaches the original.
	c := base.clone()
	c.Args[0], c.Env["A"], c.ExtraEnv[0], c.Headers["H"] = "z", "z", "z", "z"
	if base.Args[0] != "-c" || base.Env["A"] != "1" || base.ExtraEnv[0] != "B=2" || base.Headers["H"] != "v" {
		t.Errorf("clone shares memory with the original: %+v", base)
	}
	for i := range rt.NumField() {
		switch k := rt.Field(i).Type.Kind(); k {
		case reflect.Slice, reflect.Map, reflect.Pointer:
			a, b := reflect.ValueOf(base).Field(i), reflect.ValueOf(base.clone()).Field(i)
			if a.UnsafePointer() == b.UnsafePointer() {
				t.Errorf("clone shares UnitConfig.%s", rt.Field(i).Name)
			}
		}
	}
}

// mutate changes v to a different value of its type.
func mutate(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "-changed")
	case reflect.Int, reflect.Int64:
		v.SetInt(v.Int() + 7)
	case reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		v.SetUint(v.Uint() + 7)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Slice:
		v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for _, k := range v.MapKeys() {
			m.SetMapIndex(k, v.MapIndex(k))
		}
		m.SetMapIndex(reflect.ValueOf("NEW").Convert(v.Type().Key()), reflect.Zero(v.Type().Elem()))
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if mutate(v.Field(i)) {
				return true
			}
		}
		return false
	default:
		return false
	}
	return true
}

package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestScenario_HarnessDFilesAreIncludedAfterTheConfigsOwn: harnesses of
// harness.d/*.toml join the config file's, in order, and say which file
// they came from; a profile of the config file may name them.
func TestScenario_HarnessDFilesAreIncludedAfterTheConfigsOwn(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "harness.toml")
	writeFile(t, cfgPath, "[harness.own]\ncmd = \"sleep\"\n\n[profile.p]\nharnesses = [\"own\", \"w1\"]\n")
	writeFile(t, filepath.Join(dir, "harness.d", "w1.toml"), "[harness.w1]\ncmd = \"sh\"\nargs = [\"-c\", \"true\"]\n")
	writeFile(t, filepath.Join(dir, "harness.d", ".w2.toml.tmp1"), "not toml at all [")
	writeFile(t, filepath.Join(dir, "harness.d", "notes.txt"), "not toml at all [")
	cfg, err := Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Order, []string{"own", "w1"}) {
		t.Fatalf("order %v", cfg.Order)
	}
	if cfg.Included["w1"] != filepath.Join(dir, "harness.d", "w1.toml") || cfg.Included["own"] != "" {
		t.Fatalf("included %v", cfg.Included)
	}
	if p := cfg.Profiles["p"]; p == nil || !slices.Contains(p.Harnesses, "w1") {
		t.Fatalf("profile %+v", p)
	}
	// LoadWith sees a file as given, or as absent.
	cfg, err = LoadWith(cfgPath, map[string]*Include{"w3.toml": {Name: "w3.toml", Data: []byte("[harness.w3]\ncmd = \"true\"\n")}})
	if err != nil || cfg.Harnesses["w3"] == nil {
		t.Fatalf("LoadWith w3: %v", err)
	}
	if _, err := LoadWith(cfgPath, map[string]*Include{"w1.toml": nil}); err == nil || !strings.Contains(err.Error(), `unknown harness "w1"`) {
		t.Fatalf("without w1 the profile should fail: %v", err)
	}
}

// TestScenario_AnIncludedFilesErrorsNameItsOwnLines: problems of an
// included file carry harness.d/NAME.toml:LINE; a harness declared twice
// names the other place; anything but [harness.*] is refused there.
func TestScenario_AnIncludedFilesErrorsNameItsOwnLines(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "harness.toml")
	writeFile(t, cfgPath, "# mine\n[harness.own]\ncmd = \"sleep\"\n")
	writeFile(t, filepath.Join(dir, "harness.d", "a.toml"), "\n\n[harness.a]\ncmd = \"sh\"\nrestart = \"sometimes\"\n")
	writeFile(t, filepath.Join(dir, "harness.d", "b.toml"), "[harness.own]\ncmd = \"sh\"\n\n[daemon]\nwatch_config = true\n")
	writeFile(t, filepath.Join(dir, "harness.d", "c.toml"), "[harness.c\n")
	_, err := Load(cfgPath)
	if err == nil {
		t.Fatal("loaded")
	}
	msg := err.Error()
	for _, want := range []string{
		"harness.d/c.toml:1",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	os.Remove(filepath.Join(dir, "harness.d", "c.toml"))
	_, err = Load(cfgPath)
	if err == nil {
		t.Fatal("loaded")
	}
	msg = err.Error()
	for _, want := range []string{
		`harness.d/a.toml:5: harness.a.restart: invalid restart policy "sometimes"`,
		`harness.d/b.toml:1: harness.own: harness "own" is already declared at harness.toml:2: harness.own`,
		`harness.d/b.toml:4: daemon: not allowed in harness.d`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
}

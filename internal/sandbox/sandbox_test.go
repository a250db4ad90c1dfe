package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestScenario_ARequiredSandboxTheMachineCannotBuildRefusesTheStart(t *testing.T) {
	pol := &Policy{FS: FSWorkdir, Network: NetAllow, Required: true}
	_, lv, err := Plan(pol, Caps{Why: "macOS"})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no Landlock") || !strings.Contains(err.Error(), "namespaces") {
		t.Fatalf("required on a bare machine: %v", err)
	}
	if lv.FS != FSNotBuilt || lv.Network != FSNotBuilt {
		t.Fatalf("levels: %+v", lv)
	}
}

func TestScenario_AnOptionalSandboxStartsWithTheLevelsReachedShown(t *testing.T) {
	pol := &Policy{FS: FSWorkdir, Network: NetNone, Required: false, TmpDir: "/s/tmp"}
	spec, lv, err := Plan(pol, Caps{Landlock: 7})
	if err != nil {
		t.Fatal(err)
	}
	if lv.FS != "landlock-v7" || lv.Network != FSNotBuilt || lv.Missing == "" {
		t.Fatalf("levels: %+v", lv)
	}
	if !spec.FS || spec.Net != "" || !slices.Contains(spec.RW, "/s/tmp") {
		t.Fatalf("spec: %+v", spec)
	}
	_, lv, err = Plan(&Policy{FS: FSWorkdir, Network: NetAllow, Required: true}, Caps{Landlock: 7, UserNS: true})
	if err != nil || lv.Network != "netns+proxy" || lv.Missing != "" {
		t.Fatalf("everything available: %+v %v", lv, err)
	}
}

func TestReadRootsLeaveOnlyTheDeniedPathUnreadable(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"home/u/.ssh", "home/u/src", "home/v", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "home/u/.bashrc"), nil, 0o644)
	os.Symlink(filepath.Join(root, "home/u/.ssh"), filepath.Join(root, "home/u/keys"))
	read, list := readRoots([]string{filepath.Join(root, "home/u/.ssh"), filepath.Join(root, "home/u/.aws")})
	for _, want := range []string{"home/u/src", "home/u/.bashrc", "home/v", "etc"} {
		if !slices.Contains(read, filepath.Join(root, want)) {
			t.Errorf("%s not readable: %v", want, read)
		}
	}
	for _, r := range read {
		if Within(r, filepath.Join(root, "home/u/.ssh")) || strings.HasSuffix(r, "/keys") || r == filepath.Join(root, "home/u") {
			t.Errorf("%s is a readable root", r)
		}
	}
	if !slices.Contains(list, filepath.Join(root, "home/u")) {
		t.Errorf("the denied path's parent is not listable: %v", list)
	}
}

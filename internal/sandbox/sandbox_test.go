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

func TestScenario_APrivateTmpIsMountedOnlyWhenNothingTheRunNeedsLiesBelowTmp(t *testing.T) {
	pol := &Policy{FS: FSWorkdir, TmpDir: "/s/sandbox/a/tmp", StateDirs: []string{"~/.claude"}, Keep: []string{"/run/h/harness.sock"}}
	spec, lv, err := Plan(pol, Caps{Landlock: 7, UserNS: true, MountNS: true})
	if err != nil || spec.Tmp != "/s/sandbox/a/tmp" || lv.Tmp != TmpLevelMount || !spec.Namespaced() || spec.Net != "" {
		t.Fatalf("with a mount namespace: %+v %+v %v", spec, lv, err)
	}
	if why := Place(&spec, &lv, pol, "/src/app", "/home/u", "/usr/bin/claude"); why != "" || spec.Tmp == "" {
		t.Fatalf("nothing below /tmp, yet %q", why)
	}
	for _, c := range []struct{ work, home, sock string }{
		{"/tmp/app", "/home/u", "/run/h/harness.sock"},
		{"/src/app", "/tmp/home", "/run/h/harness.sock"}, // ~/.claude too
		{"/src/app", "/home/u", "/tmp/h/harness.sock"},
	} {
		s, l, p := spec, lv, *pol
		p.Keep = []string{c.sock}
		if why := Place(&s, &l, &p, c.work, c.home, "/usr/bin/claude"); why == "" || s.Tmp != "" || l.Tmp != TmpLevelDir || s.Namespaced() {
			t.Errorf("%+v: kept the mount (%q): %+v %+v", c, why, s, l)
		}
	}
	spec, lv, _ = Plan(pol, Caps{Landlock: 7})
	if spec.Tmp != "" || lv.Tmp != TmpLevelDir || !slices.Contains(spec.RW, "/s/sandbox/a/tmp") {
		t.Fatalf("without a mount namespace: %+v %+v", spec, lv)
	}
}

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScenario_ACIRunShowsFailuresWholeAndWhereItsTimeWent runs a real
// `go test -json` on a package with a passing, a failing, a slow and a
// crashing test and reads it as CI does: the failing test's output whole,
// the passing one's not at all, the crashed one's so far, every package's
// result line, and the slow test listed with its time.
func TestScenario_ACIRunShowsFailuresWholeAndWhereItsTimeWent(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/sum\n\ngo 1.26\n")
	write("a_test.go", `package sum

import (
	"os"
	"testing"
	"time"
)

func TestPasses(t *testing.T) { t.Log("quiet when passing") }

func TestFails(t *testing.T) {
	t.Run("sub", func(t *testing.T) { t.Error("the reason it failed") })
}

func TestSlow(t *testing.T) { time.Sleep(300 * time.Millisecond) }

func TestCrashes(t *testing.T) {
	if os.Getenv("CRASH") != "" {
		t.Log("said before the crash")
		panic("the binary dies")
	}
}
`)
	run := func(crash string) (string, error) {
		t.Helper()
		gt := exec.Command("go", "test", "-json", "-count=1", ".")
		gt.Dir, gt.Env = dir, append(os.Environ(), "CRASH="+crash, "GOFLAGS=")
		js, _ := gt.Output() // it fails: that is the point
		var out bytes.Buffer
		s := newSummary(&out)
		for _, l := range bytes.Split(bytes.TrimSpace(js), []byte("\n")) {
			s.line(l)
		}
		s.slowest(200*time.Millisecond, 10)
		if !s.failed {
			return out.String(), os.ErrInvalid
		}
		return out.String(), nil
	}
	out, err := run("")
	if err != nil {
		t.Fatalf("a failed run is not a failure:\n%s", out)
	}
	for _, want := range []string{"--- FAIL: TestFails/sub", "the reason it failed", "--- FAIL: TestFails ", "FAIL\texample.com/sum",
		"tests that took 200ms or more", "TestSlow"} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "quiet when passing") {
		t.Errorf("a passing test's output is shown:\n%s", out)
	}
	out, err = run("1")
	if err != nil {
		t.Fatalf("a crashed run is not a failure:\n%s", out)
	}
	for _, want := range []string{"panic: the binary dies", "said before the crash"} {
		if !strings.Contains(out, want) {
			t.Errorf("the crash's summary lacks %q:\n%s", want, out)
		}
	}
}

package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// helperEnv makes the test binary, re-executed, run the helper test below
// instead of skipping it.
const helperEnv = "TESTENV_HELPER"

// TestHelperNeedsAMissingProgram is run in a child by the scenario below: it
// asks for a program no machine has.
func TestHelperNeedsAMissingProgram(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("run by TestScenario_AMissingProgramSkipsOrFailsUnderCI in a child")
	}
	Program(t, "harness-testenv-no-such-program")
	t.Log("reached the code after Program") // never: Program ends the test
}

// TestScenario_AMissingProgramSkipsOrFailsUnderCI: on a developer's machine
// a missing program skips the test in one line naming it; with
// HARNESS_CI=1 the same test fails.
func TestScenario_AMissingProgramSkipsOrFailsUnderCI(t *testing.T) {
	for _, c := range []struct {
		ci       string
		wantFail bool
		wantWord string
	}{
		{"", false, "--- SKIP"},
		{"0", false, "--- SKIP"},
		{"1", true, "--- FAIL"},
		{"true", true, "--- FAIL"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperNeedsAMissingProgram$", "-test.v")
		cmd.Env = append(os.Environ(), helperEnv+"=1", CIEnv+"="+c.ci)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != c.wantFail {
			t.Errorf("%s=%q: exit error %v, want failure %v:\n%s", CIEnv, c.ci, err, c.wantFail, out)
		}
		text := string(out)
		if !strings.Contains(text, c.wantWord) || !strings.Contains(text, "needs harness-testenv-no-such-program on PATH") {
			t.Errorf("%s=%q: want %s naming the program:\n%s", CIEnv, c.ci, c.wantWord, text)
		}
		if strings.Contains(text, "reached the code after Program") {
			t.Errorf("%s=%q: the test went on past a missing program:\n%s", CIEnv, c.ci, text)
		}
	}
}

func TestCheckSaysWhetherToFail(t *testing.T) {
	t.Setenv(CIEnv, "")
	if line, fail := Check("node", ""); fail || !strings.Contains(line, "needs node") || !strings.Contains(line, "skipping") {
		t.Errorf("without CI: %q, %v", line, fail)
	}
	t.Setenv(CIEnv, "1")
	if line, fail := Check("node", "not on PATH"); !fail || !strings.Contains(line, "needs node: not on PATH") {
		t.Errorf("under CI: %q, %v", line, fail)
	}
}

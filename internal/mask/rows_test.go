package mask

import (
	"reflect"
	"testing"
)

// TestScenario_ScreenRowsMaskATokenTheTerminalWrapped: a token wrapped
// across full-width rows is masked whole; other rows are masked alone.
func TestScenario_ScreenRowsMaskATokenTheTerminalWrapped(t *testing.T) {
	m := New("literal-secret")
	tok := "ghp_0123456789abcdefghijABCDEFGHIJ"
	line := "x " + tok + " y" // 38 columns: rows of 10, 10, 10 and 8
	rows := []string{line[:10], line[10:20], line[20:30], line[30:], "short row", "a literal-secret"}
	m.Rows(rows, 10)
	want := []string{"x [masked]", " y", "", "", "short row", "a [masked]"}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows %q, want %q", rows, want)
	}
}

// TestScenario_ScreenRowsMaskASecretStillBeingPrinted: a program that
// writes a secret in two parts shows its beginning for a moment; a row
// ending in a literal's beginning of MinLen bytes or more is masked, a
// shorter one or one the row goes on from is not.
func TestScenario_ScreenRowsMaskASecretStillBeingPrinted(t *testing.T) {
	m := New("env-value-0123456789")
	rows := []string{"says env-value-01234", "ends env-v", "env-value-01 and more", "wrapped secret env-value", "-0123"}
	m.Rows(rows, 24)
	want := []string{"says [masked]", "ends env-v", "env-value-01 and more", "wrapped secret [masked]", ""}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows %q, want %q", rows, want)
	}
}

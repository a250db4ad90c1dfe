package control

import (
	"reflect"
	"testing"

	"github.com/harness-dev/harness/internal/mask"
)

// TestScenario_ScreenRowsMaskATokenTheTerminalWrapped: a token wrapped
// across full-width rows is masked whole; other rows are masked alone.
func TestScenario_ScreenRowsMaskATokenTheTerminalWrapped(t *testing.T) {
	m := mask.New("literal-secret")
	tok := "ghp_0123456789abcdefghijABCDEFGHIJ"
	line := "x " + tok + " y" // 38 columns: rows of 10, 10, 10 and 8
	rows := []string{line[:10], line[10:20], line[20:30], line[30:], "short row", "a literal-secret"}
	maskRows(m, rows, 10)
	want := []string{"x [masked]", " y", "", "", "short row", "a [masked]"}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows %q, want %q", rows, want)
	}
}

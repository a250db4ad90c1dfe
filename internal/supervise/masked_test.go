package supervise

import (
	"context"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/mask"
	"github.com/harness-dev/harness/internal/term"
)

// TestScenario_AMaskedViewerGetsTheMaskedScreenNeverTheBytes: a program
// echoes a secret; the viewer that types gets the bytes, the masked one
// only repaints of the screen, the secret as [masked].
func TestScenario_AMaskedViewerGetsTheMaskedScreenNeverTheBytes(t *testing.T) {
	const secret = "hunter2-secret-value"
	e := newEnv(t, helperCfg("keys", "keys", nil))
	e.start()
	e.waitFor("ready on the screen", func() bool { return e.u.Term().Snapshot(term.SnapshotOptions{}).Lines[0] == "ready" })
	v := attach(t, e.u, ViewerOptions{Cols: 90, Rows: 20})
	if _, ev, err := next(t, v); err != nil || ev == nil {
		t.Fatalf("the viewer's first item: %+v, %v", ev, err)
	}
	mv := attach(t, e.u, ViewerOptions{ReadOnly: true, Masked: true, Masker: mask.New(secret)})
	if _, ev, err := next(t, mv); err != nil || ev == nil {
		t.Fatalf("the masked viewer's first item: %+v, %v", ev, err)
	}
	readUntil(t, mv, "ready")
	if err := v.Input(context.Background(), []byte(secret)); err != nil {
		t.Fatal(err)
	}
	readUntil(t, v, secret)
	var got strings.Builder
	for !strings.Contains(got.String(), `got "[masked]"`) {
		out, ev, err := next(t, mv)
		if err != nil || ev != nil {
			t.Fatalf("masked viewer: notice %+v, err %v; read %q", ev, err, got.String())
		}
		if !strings.HasPrefix(string(out), "\x1b[?1049l\x1b[m\x1b[H\x1b[2J") {
			t.Fatalf("a masked viewer's read is not a repaint: %q", out)
		}
		got.Write(out)
	}
	if strings.Contains(got.String(), secret) {
		t.Fatalf("the masked viewer got the secret: %q", got.String())
	}
}

// A row the masking changes loses its colours and is cut at the width;
// the others keep theirs.
func TestScenario_AMaskedRepaintKeepsTheColoursOfRowsWithoutASecret(t *testing.T) {
	s := term.Snapshot{Cols: 12, Rows: 2,
		Lines: []string{"key hunter2x", "plain"},
		ANSI:  []string{"\x1b[31mkey hunter2x\x1b[m", "\x1b[1mplain\x1b[m"}}
	out := maskedRepaint(s, false, mask.New("hunter2x"))
	if strings.Contains(out, "hunter2x") || !strings.Contains(out, "\x1b[1Hkey [masked]\x1b[2H") || !strings.Contains(out, "\x1b[1mplain\x1b[m") {
		t.Fatalf("masked repaint %q", out)
	}
}

package supervise

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/mask"
	"github.com/harness-dev/harness/internal/term"
)

// A masked viewer (docs/design/masking.md) is for a person who may watch
// but not type: it must see no more than `screen` shows. The program's
// bytes cannot be masked as they pass (a secret may be split across reads
// or drawn a cell at a time between cursor moves), so such a viewer is
// sent the emulator's screen instead, rows masked as `screen` masks them,
// repainted whenever the screen changed, at most every maskedFrame.
const maskedFrame = 50 * time.Millisecond

// maskedView is a masked viewer's state; guarded by fanout.mu.
type maskedView struct {
	m       *mask.Masker
	dirty   bool      // output came since the last repaint
	painted time.Time // the last repaint
}

// pace holds a masked viewer's next repaint until maskedFrame after the
// last, so a program that prints fast costs one snapshot a frame, not one
// per read. Notices are not held.
func (v *Viewer) pace(ctx context.Context) error {
	if v.masked == nil {
		return nil
	}
	v.f.mu.Lock()
	wait := time.Duration(0)
	if v.masked.dirty && len(v.queue) == 0 {
		wait = maskedFrame - time.Since(v.masked.painted)
	}
	v.f.mu.Unlock()
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err() //nolint:wrapcheck // as Next returns it
	}
}

// repaintLocked is the masked repaint of t's screen.
func (mv *maskedView) repaintLocked(t *term.Term) []byte {
	mv.dirty, mv.painted = false, time.Now()
	return []byte(maskedRepaint(t.Snapshot(term.SnapshotOptions{ANSI: true}), t.BracketedPaste(), mv.m))
}

// maskedRepaint is repaint with every row masked: a row the masking
// changed is drawn as its masked text (its colours are lost, cut at the
// width so it cannot scroll the screen); any other row keeps its colours,
// masked in its ANSI form too (a secret in a hyperlink's target). The
// alternate screen is entered or left as the program's is, since the
// viewer never sees the program's own switch.
func maskedRepaint(s term.Snapshot, paste bool, m *mask.Masker) string {
	plain := slices.Clone(s.Lines)
	m.Rows(plain, s.Cols)
	for y := range s.ANSI {
		if y < len(plain) && plain[y] != s.Lines[y] {
			s.ANSI[y] = cut(plain[y], s.Cols)
			continue
		}
		s.ANSI[y] = m.String(s.ANSI[y])
	}
	var b strings.Builder
	if s.AltScreen {
		b.WriteString("\x1b[?1049h")
	} else {
		b.WriteString("\x1b[?1049l")
	}
	if paste {
		b.WriteString("\x1b[?2004h")
	}
	b.WriteString(s.Repaint())
	return b.String()
}

// cut is s at most cols runes long.
func cut(s string, cols int) string {
	n := 0
	for i := range s {
		if n == cols {
			return s[:i]
		}
		n++
	}
	return s
}

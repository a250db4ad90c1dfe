package control

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/term"
)

// reader is a harness that prints what it reads from its terminal, byte
// by byte (od -c), in raw mode; with paste it turns on bracketed paste
// first, as an editor or agent prompt does.
func reader(name string, paste bool) string {
	script := "stty raw -echo opost; printf 'ready\\r\\n'; exec od -An -c -w1 -v"
	if paste {
		script = "printf '\\033[?2004h'; " + script
	}
	return "[harness." + name + "]\ncmd = \"sh\"\nargs = [\"-c\", \"" + strings.ReplaceAll(script, `\`, `\\`) + "\"]\nstop_grace = 2\n"
}

// screenOf is what the harness's screen shows, row by row, each row
// trimmed (od right-aligns its columns).
func (f *fixture) screenOf(name string) string {
	f.t.Helper()
	u, err := f.c.lookup(name)
	if err != nil {
		f.t.Fatal(err)
	}
	lines := u.sup.Term().Snapshot(term.SnapshotOptions{}).Lines
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, "\n")
}

// waitScreen waits until the harness's screen shows each of want.
func (f *fixture) waitScreen(name string, want ...string) string {
	f.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s := f.screenOf(name)
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(s, w)
		}
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("screen of %s never showed %q:\n%s", name, want, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// odChars is how od -c -w1 prints bytes, one per row.
func odChars(s string) string {
	var rows []string
	for _, b := range []byte(s) {
		switch {
		case b == 0x1b:
			rows = append(rows, "033")
		case b == '\r':
			rows = append(rows, `\r`)
		case b == '\t':
			rows = append(rows, `\t`)
		case b < 0x20 || b == 0x7f:
			rows = append(rows, fmt.Sprintf("%03o", b))
		default:
			rows = append(rows, string(rune(b)))
		}
	}
	return strings.Join(rows, "\n")
}

// TestScenario_SendTypesTextKeysAndEnter: text, named keys in order and
// Enter reach the program as a terminal would send them.
func TestScenario_SendTypesTextKeysAndEnter(t *testing.T) {
	f := newFixture(t, reader("agent", false))
	f.mustCall(api.OpStart, api.NamesArgs{Name: "agent"}, nil)
	f.waitScreen("agent", "ready")
	var res api.SendResult
	f.mustCall(api.OpSend, api.SendArgs{Name: "agent", Text: "ok", Keys: []string{"Up", "C-c", "tab", "Esc"}, Enter: true}, &res)
	if res.Name != "agent" || res.RunID == 0 || res.Bytes != 2+3+1+1+1+1 {
		t.Fatalf("send result %+v", res)
	}
	screen := f.waitScreen("agent", odChars("ok\x1b[A\x03\t\x1b\r"))
	if strings.Contains(screen, "200") {
		t.Fatalf("a paste marker without bracketed paste:\n%s", screen)
	}
}

// TestScenario_SendPastesWhenTheProgramAskedForIt: with bracketed paste
// on, the text arrives between the markers, and a marker inside the text
// cannot end the paste.
func TestScenario_SendPastesWhenTheProgramAskedForIt(t *testing.T) {
	f := newFixture(t, reader("agent", true))
	f.mustCall(api.OpStart, api.NamesArgs{Name: "agent"}, nil)
	f.waitScreen("agent", "ready")
	f.mustCall(api.OpSend, api.SendArgs{Name: "agent", Text: "a" + pasteEnd + "b", Enter: true}, nil)
	f.waitScreen("agent", odChars(pasteStart+"ab"+pasteEnd+"\r"))
}

// TestSend_RefusalsCarryTheirCodes: unknown keys list the valid ones, the
// bound is said, a stopped harness is not_running, an upstream and an
// empty send are invalid_argument.
func TestSend_RefusalsCarryTheirCodes(t *testing.T) {
	f := newFixture(t, reader("agent", false)+"[mcp.up]\ncmd = \"cat\"\n")
	cases := []struct {
		name string
		args api.SendArgs
		code errcode.Code
		says string
	}{
		{"stopped", api.SendArgs{Name: "agent", Text: "x"}, errcode.NotRunning, "not running"},
		{"unknown harness", api.SendArgs{Name: "nope", Text: "x"}, errcode.UnknownHarness, "nope"},
		{"upstream", api.SendArgs{Name: "mcp.up", Text: "x"}, errcode.InvalidArgument, "no terminal"},
		{"bad key", api.SendArgs{Name: "agent", Keys: []string{"Enter", "F13"}}, errcode.InvalidArgument,
			`unknown key "F13": valid keys are Enter, Tab, Esc, Up, Down, Left, Right, Backspace, Space, C-a … C-z`},
		{"bad ctrl", api.SendArgs{Name: "agent", Keys: []string{"C-1"}}, errcode.InvalidArgument, `unknown key "C-1"`},
		{"empty", api.SendArgs{Name: "agent"}, errcode.InvalidArgument, "nothing to send"},
		{"too big", api.SendArgs{Name: "agent", Text: strings.Repeat("x", MaxSendBytes+1)}, errcode.InvalidArgument,
			"send of 16385 bytes is over the bound of 16384 bytes"},
	}
	for _, tc := range cases {
		err := f.call(api.OpSend, tc.args, nil)
		if errcode.Of(err) != tc.code || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v (code %s), want %s saying %q", tc.name, err, errcode.Of(err), tc.code, tc.says)
		}
	}
	// Key names and the bound are checked before the unit is: a running
	// harness gets the same answers.
	f.mustCall(api.OpStart, api.NamesArgs{Name: "agent"}, nil)
	f.waitScreen("agent", "ready")
	if err := f.call(api.OpSend, api.SendArgs{Name: "agent", Keys: []string{"F13"}}, nil); errcode.Of(err) != errcode.InvalidArgument {
		t.Fatalf("bad key to a running harness: %v", err)
	}
	// Exactly at the bound is fine.
	f.mustCall(api.OpSend, api.SendArgs{Name: "agent", Text: strings.Repeat("y", MaxSendBytes-1), Enter: true}, nil)
	if err := f.call(api.OpSend, map[string]any{"name": "agent", "txt": "x"}, nil); errcode.Of(err) != errcode.InvalidArgument {
		t.Fatalf("a misspelt argument: %v", err)
	}
}

// TestAttach_RefusalsCarryTheirCodes: attach refuses what has no
// terminal or no process, with the codes the CLI shows.
func TestAttach_RefusalsCarryTheirCodes(t *testing.T) {
	f := newFixture(t, reader("agent", false)+"[mcp.up]\ncmd = \"cat\"\n")
	ctx := context.Background()
	if _, err := f.c.Attach(ctx, api.AttachArgs{Name: "agent"}); errcode.Of(err) != errcode.NotRunning {
		t.Fatalf("attach to a stopped harness: %v", err)
	}
	if _, err := f.c.Attach(ctx, api.AttachArgs{Name: "mcp.up"}); errcode.Of(err) != errcode.InvalidArgument {
		t.Fatalf("attach to an upstream: %v", err)
	}
	if _, err := f.c.Attach(ctx, api.AttachArgs{Name: "nope"}); errcode.Of(err) != errcode.UnknownHarness {
		t.Fatalf("attach to nothing: %v", err)
	}
	f.mustCall(api.OpStart, api.NamesArgs{Name: "agent"}, nil)
	f.waitScreen("agent", "ready")
	// A viewer may grow the terminal (never shrink it below term_size,
	// 120x40 here): the first notice says the size in force.
	v, err := f.c.Attach(ctx, api.AttachArgs{Name: "agent", Cols: 150, Rows: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	_, ev, err := v.Next(ctx)
	if err != nil || ev == nil || ev.Kind != api.AttachAttached || ev.Cols != 150 || ev.Rows != 50 {
		t.Fatalf("first notice %+v %v", ev, err)
	}
}

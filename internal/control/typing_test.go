package control

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/supervise"
)

// TestSend_EnterAfterAPasteIsWrittenApartWhenTheAgentNeedsIt: the
// writing policy of a send. For an agent whose adapter says Enter must
// follow a paste apart (Gemini CLI), the first Enter after pasted text,
// and the keys after it, are the Typing's Submit, written EnterAfterPaste
// after the paste was drawn; everything else, and every send to Claude
// Code, Codex or a program without an adapter, is one write, as a
// terminal sends it.
func TestSend_EnterAfterAPasteIsWrittenApartWhenTheAgentNeedsIt(t *testing.T) {
	gemini := agent.MustLookup(agent.Gemini).EnterAfterPaste
	if gemini <= 0 {
		t.Fatal("the gemini adapter does not ask for its Enter apart")
	}
	for _, name := range []string{agent.ClaudeCode, agent.Codex, agent.Generic} {
		if d := agent.MustLookup(name).EnterAfterPaste; d != 0 {
			t.Errorf("%s: EnterAfterPaste %s: its Enter works in the same write as the paste (interop)", name, d)
		}
	}
	p := func(s string) string { return pasteStart + s + pasteEnd }
	cases := []struct {
		name        string
		send        api.SendArgs
		paste       bool
		after       time.Duration
		data, enter string
	}{
		{"text and enter to gemini", api.SendArgs{Text: "fix.the.bug", Enter: true}, true, gemini, p("fix.the.bug"), "\r"},
		{"keys before enter go with the paste", api.SendArgs{Text: "fix", Keys: []string{"Tab"}, Enter: true}, true, gemini, p("fix") + "\t", "\r"},
		{"a key Enter counts, and the keys after it follow it", api.SendArgs{Text: "fix", Keys: []string{"Left", "C-m", "Down"}}, true, gemini, p("fix") + "\x1b[D", "\r\x1b[B"},
		{"no paste mode: typed text has no paste guard", api.SendArgs{Text: "fix", Enter: true}, false, gemini, "fix\r", ""},
		{"keys only", api.SendArgs{Keys: []string{"Down"}, Enter: true}, true, gemini, "\x1b[B\r", ""},
		{"text without enter", api.SendArgs{Text: "fix"}, true, gemini, p("fix"), ""},
		{"an agent without the guard", api.SendArgs{Text: "fix.the.bug", Enter: true}, true, 0, p("fix.the.bug") + "\r", ""},
	}
	for _, tc := range cases {
		got, err := encodeSend(tc.send, tc.paste, tc.after)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := supervise.Typing{Data: []byte(tc.data)}
		if tc.enter != "" {
			want.Submit, want.SubmitAfter = []byte(tc.enter), tc.after
		}
		if string(got.Data) != string(want.Data) || string(got.Submit) != string(want.Submit) || got.SubmitAfter != want.SubmitAfter {
			t.Errorf("%s: typing %q then %q after %s, want %q then %q after %s", tc.name,
				got.Data, got.Submit, got.SubmitAfter, want.Data, want.Submit, want.SubmitAfter)
		}
	}
	// The bound counts the whole send, Enter included.
	if _, err := encodeSend(api.SendArgs{Text: strings.Repeat("x", MaxSendBytes-len(p(""))), Enter: true}, true, gemini); err == nil {
		t.Error("a send one byte over the bound with its Enter apart was taken")
	}
}

// chunkReader is a harness that shows each read of its terminal on a row
// of its own (od -c of what one read returned), in raw mode with
// bracketed paste on, under Gemini CLI's adapter: its prompt line makes
// the agent ready.
func chunkReader(name, extra string) string {
	script := `stty raw -echo opost; printf '\033[?2004h > Type your message\r\n'; ` +
		`while :; do dd bs=4096 count=1 2>/dev/null | od -An -c -w4096 | tr -s ' '; printf '\r'; done`
	return "[harness." + name + "]\ncmd = \"sh\"\nargs = [\"-c\", \"" + strings.ReplaceAll(script, `\`, `\\`) + "\"]\n" +
		"agent = \"gemini\"\nstop_grace = 2\n" + extra
}

// TestScenario_SendAndPromptToGeminiWriteTheEnterApart: `send --enter`
// and an interactive run's prompt to a harness of Gemini CLI's adapter
// reach the program in two reads, the paste and then the Enter alone
// (one write would be one read), the send answering only after its Enter
// went in, EnterAfterPaste after the program drew the paste.
func TestScenario_SendAndPromptToGeminiWriteTheEnterApart(t *testing.T) {
	after := agent.MustLookup(agent.Gemini).EnterAfterPaste
	pasted := func(s string) string {
		return strings.TrimSpace(odRow(pasteStart + s + pasteEnd))
	}
	t.Run("send", func(t *testing.T) {
		f := newFixture(t, chunkReader("gem", ""))
		f.mustCall(api.OpStart, api.NamesArgs{Name: "gem"}, nil)
		f.waitScreen("gem", "Type your message")
		start := time.Now()
		var res api.SendResult
		f.mustCall(api.OpSend, api.SendArgs{Name: "gem", Text: "fix.the.bug", Enter: true}, &res)
		if took := time.Since(start); took < after {
			t.Errorf("the send answered %s after it began, before its Enter could be written (%s after the draw)", took, after)
		}
		if want := len(pasteStart + "fix.the.bug" + pasteEnd + "\r"); res.Bytes != want {
			t.Errorf("send result %+v, want %d bytes", res, want)
		}
		f.waitScreen("gem", pasted("fix.the.bug")+"\n"+`\r`)
	})
	t.Run("prompt", func(t *testing.T) {
		f := newFixture(t, chunkReader("gem", "prompt = \"fix.the.bug\"\n"))
		f.mustCall(api.OpStart, api.NamesArgs{Name: "gem"}, nil)
		f.waitScreen("gem", pasted("fix.the.bug")+"\n"+`\r`)
	})
}

// odRow is how `od -An -c -w4096 | tr -s ' '` shows bytes read at once
// (a text without spaces: tr squeezes the one od shows).
func odRow(s string) string {
	return " " + strings.ReplaceAll(odChars(s), "\n", " ")
}

// TestScenario_ASendToAGeminiStillStartingWaitsUntilItReadsKeys: Gemini
// CLI drops what is typed before it reads keys (its prompt drawn, paste
// mode still off: starting), as between a trust answer and its next
// process. A send then waits until the program turns paste mode on with
// its reader, and is typed as a paste for it; typed at once, it would
// have been plain keys in a terminal nobody read.
func TestScenario_ASendToAGeminiStillStartingWaitsUntilItReadsKeys(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	script := `stty raw -echo opost; printf ' > Type your message\r\n'; read _ < ` + fifo + `; printf '\033[?2004h'; ` +
		`while :; do dd bs=4096 count=1 2>/dev/null | od -An -c -w4096 | tr -s ' '; printf '\r'; done`
	f := newFixture(t, "[harness.gem]\ncmd = \"sh\"\nargs = [\"-c\", \""+strings.ReplaceAll(script, `\`, `\\`)+"\"]\nagent = \"gemini\"\nstop_grace = 2\n")
	f.mustCall(api.OpStart, api.NamesArgs{Name: "gem"}, nil)
	f.waitScreen("gem", "Type your message")
	sent := make(chan error, 1)
	go func() { sent <- f.call(api.OpSend, api.SendArgs{Name: "gem", Text: "fix.the.bug", Enter: true}, nil) }()
	// A send typed at once answers at once; one that waits does not
	// answer before the program reads keys.
	select {
	case err := <-sent:
		t.Fatalf("the send answered (%v) while the program read no keys", err)
	case <-time.After(2 * time.Second):
	}
	if err := os.WriteFile(fifo, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	f.waitScreen("gem", strings.TrimSpace(odRow(pasteStart+"fix.the.bug"+pasteEnd)))
}

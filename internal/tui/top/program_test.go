package top

import (
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/harness-dev/harness/internal/api"
)

// fakeAttach stands in for an attachment: it records that it ran with
// the program's terminal handed to it.
type fakeAttach struct {
	unit string
	ran  chan<- string
	in   io.Reader
}

func (f *fakeAttach) Run() error {
	if f.in == nil {
		return io.ErrClosedPipe
	}
	f.ran <- f.unit
	return nil
}
func (f *fakeAttach) SetStdin(r io.Reader)  { f.in = r }
func (f *fakeAttach) SetStdout(io.Writer)   {}
func (f *fakeAttach) SetStderr(w io.Writer) {}

// TestAttachHandsTheTerminalOverAndComesBack runs the model in a real
// bubbletea program: the attach key runs the attachment with the
// program's input (bubbletea releases the terminal for it), and the
// dashboard resumes with a status line when it returns; q then ends the
// program.
func TestAttachHandsTheTerminalOverAndComesBack(t *testing.T) {
	ran := make(chan string, 1)
	events := make(chan api.Event)
	// Timers that end with the test (tea.Tick's cannot be stopped).
	stop := make(chan struct{})
	defer close(stop)
	after := func(d time.Duration, msg tea.Msg) tea.Cmd {
		return func() tea.Msg {
			select {
			case <-time.After(d):
				return msg
			case <-stop:
				return nil
			}
		}
	}
	m := New(Options{Backend: smallFleet(), Events: events, Socket: "/run/test.sock", After: after,
		Attach: func(unit string) tea.ExecCommand { return &fakeAttach{unit: unit, ran: ran} }})
	loaded, detached := make(chan struct{}), make(chan doneMsg, 1)
	var once sync.Once
	filter := func(_ tea.Model, msg tea.Msg) tea.Msg {
		switch msg := msg.(type) {
		case listMsg:
			defer once.Do(func() { close(loaded) })
		case doneMsg:
			if msg.op == "attach" {
				detached <- msg
			}
		case probe:
			msg() // on the program's goroutine, where the model may be read
			return nil
		}
		return msg
	}
	// A pipe with a descriptor: bubbletea can cancel a read on it, which
	// it does when it hands its input to the attachment.
	in, keys, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	p := tea.NewProgram(m, tea.WithInput(in), tea.WithOutput(io.Discard), tea.WithWindowSize(100, 30),
		tea.WithoutSignalHandler(), tea.WithFilter(filter))
	done := make(chan error, 1)
	go func() { _, err := p.Run(); done <- err }()
	defer func() {
		close(events)
		keys.Close()
	}()
	select {
	case <-loaded:
	case <-time.After(10 * time.Second):
		t.Fatal("the fleet never loaded")
	}
	help := make(chan string, 1)
	p.Send(probe(func() { help <- m.helpLine() }))
	if !strings.Contains(<-help, "a attach") {
		t.Error("help line lacks attach although the dashboard can attach")
	}
	if _, err := keys.Write([]byte("a")); err != nil {
		t.Fatal(err)
	}
	select {
	case u := <-ran:
		if u != "alpha" {
			t.Errorf("attached to %q, want the selection alpha", u)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the attachment never ran")
	}
	select {
	case msg := <-detached:
		if msg.err != nil || msg.text != "detached from alpha" {
			t.Errorf("back from attach: %+v", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the dashboard did not come back from the attachment")
	}
	if _, err := keys.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil || m.Err() != nil {
			t.Fatalf("program ended with %v, model error %v", err, m.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("q did not end the program")
	}
}

// probe is a function the program's filter runs on its own goroutine.
type probe func()

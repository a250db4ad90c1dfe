package supervise

import (
	"bytes"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// What was just typed counts as unread at once: the kernel moves bytes
// written to the master into the terminal's input queue from a work item
// that may run milliseconds later on a loaded machine, and a send that
// took the queue for empty in between would be cut by the next one.
func TestScenario_BytesJustTypedCountAsUnreadAtOnce(t *testing.T) {
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer tty.Close()
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Lflag &^= unix.ICANON | unix.ECHO // raw: every byte counts, nothing echoed back
	if err := unix.IoctlSetTermios(int(tty.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	p := bytes.Repeat([]byte("x"), 100)
	buf := make([]byte, 4096)
	for i := range 2000 {
		if _, err := master.Write(p); err != nil {
			t.Fatal(err)
		}
		n, ok := unreadInput(master)
		if !ok {
			t.Fatal("unreadInput cannot tell on Linux")
		}
		if n != len(p) {
			t.Fatalf("write %d: %d bytes unread right after writing %d", i, n, len(p))
		}
		for got := 0; got < len(p); {
			m, err := tty.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			got += m
		}
	}
}

// Package attachterm is the viewer's side of `harness attach` (docs/design/terminals.md):
// the user's terminal in raw mode, its size and size changes, the detach
// keys, the pump between that terminal and an attach stream, and putting
// the terminal back as it was, modes a program switched on included.
package attachterm

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/errcode"
)

// Terminal is the user's terminal, opened on a description of its own.
type Terminal struct {
	// f is the terminal opened anew: a description of our own, so
	// O_NONBLOCK (which lets Close end a pending read) never reaches the
	// shell's.
	f     *os.File
	saved *unix.Termios // the modes to restore; nil until Raw
}

// Open opens the terminal that stdin and stdout are. Either not being a
// terminal is invalid_argument: attach needs one to draw on and read keys
// from.
func Open(stdin, stdout *os.File) (*Terminal, error) {
	for _, f := range []*os.File{stdin, stdout} {
		if !isTerminal(f) {
			return nil, errcode.Errorf(errcode.InvalidArgument, "attach needs a terminal: %s is not one (use harness logs or harness send instead)", f.Name())
		}
	}
	var st syscall.Stat_t
	if err := statFile(stdin, &st); err != nil {
		return nil, fmt.Errorf("attach: stat stdin: %w", err)
	}
	var path string
	var perr error
	raw, err := stdin.SyscallConn() // not Fd(), which would make a non-blocking file blocking
	if err != nil {
		return nil, fmt.Errorf("attach: stdin: %w", err)
	}
	if err := raw.Control(func(fd uintptr) { path, perr = terminalPath(int(fd), &st) }); err != nil {
		return nil, fmt.Errorf("attach: stdin: %w", err)
	}
	if perr != nil {
		return nil, fmt.Errorf("attach: stdin: %w", perr)
	}
	// The path opens the same terminal device as a new description.
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("attach: open the terminal: %w", err)
	}
	var st2 syscall.Stat_t
	if err := statFile(f, &st2); err != nil || st2.Rdev != st.Rdev {
		f.Close()
		return nil, fmt.Errorf("attach: reopening stdin gave another file (%v)", err)
	}
	return &Terminal{f: f}, nil
}

func isTerminal(f *os.File) bool {
	return control(f, func(fd int) error {
		_, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
		return err
	}) == nil
}

func statFile(f *os.File, st *syscall.Stat_t) error {
	return control(f, func(fd int) error { return syscall.Fstat(fd, st) })
}

// control runs fn on the terminal's descriptor.
func (t *Terminal) control(fn func(fd int) error) error { return control(t.f, fn) }

// control runs fn on f's descriptor without os.File.Fd, which would make
// a pollable file blocking.
func control(f *os.File, fn func(fd int) error) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := raw.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// Raw puts the terminal in raw mode (as cfmakeraw does): keys arrive one
// by one, unechoed, Ctrl-C and Ctrl-Z included, for the program to handle.
func (t *Terminal) Raw() error {
	return t.control(func(fd int) error {
		old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
		if err != nil {
			return fmt.Errorf("attach: read terminal modes: %w", err)
		}
		r := *old
		r.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
		r.Oflag &^= unix.OPOST
		r.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
		r.Cflag &^= unix.CSIZE | unix.PARENB
		r.Cflag |= unix.CS8
		r.Cc[unix.VMIN], r.Cc[unix.VTIME] = 1, 0
		if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &r); err != nil {
			return fmt.Errorf("attach: raw mode: %w", err)
		}
		t.saved = old
		return nil
	})
}

// Size is the terminal's size.
func (t *Terminal) Size() (cols, rows int, err error) {
	err = t.control(func(fd int) error {
		ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
		if err != nil {
			return fmt.Errorf("attach: terminal size: %w", err)
		}
		cols, rows = int(ws.Col), int(ws.Row)
		return nil
	})
	return cols, rows, err
}

// Read reads keys; after Close it returns os.ErrClosed.
func (t *Terminal) Read(p []byte) (int, error) { return t.f.Read(p) }

// Write draws on the terminal.
func (t *Terminal) Write(p []byte) (int, error) { return t.f.Write(p) }

// Close restores the terminal's modes (when Raw changed them) and closes
// the description, which ends a Read in progress.
func (t *Terminal) Close() error {
	var errs []error
	if t.saved != nil {
		saved := t.saved
		errs = append(errs, t.control(func(fd int) error { return unix.IoctlSetTermios(fd, ioctlSetTermios, saved) }))
		t.saved = nil
	}
	if err := t.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

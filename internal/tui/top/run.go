package top

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"

	tea "charm.land/bubbletea/v2"
	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/errcode"
)

// Run shows the dashboard on this process's terminal, against the daemon
// at socket, until the user quits (nil) or the daemon goes away (an error
// saying so). The terminal is restored either way. o supplies the
// optional parts (Attach, Send, timings); its Backend, Events and Socket
// are set here. The process runs on one P unless GOMAXPROCS is set.
func Run(ctx context.Context, socket string, o Options) error {
	for _, f := range []*os.File{os.Stdin, os.Stdout} {
		if _, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios); err != nil {
			return errcode.Errorf(errcode.InvalidArgument, "harness top needs a terminal (%s is not one)", f.Name())
		}
	}
	c, err := client.Dial(ctx, socket)
	if err != nil {
		return err
	}
	defer c.Close()
	subCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := c.Subscribe(subCtx)
	if err != nil {
		return err
	}
	o.Backend, o.Events, o.Socket = c, events, socket
	if os.Getenv("GOMAXPROCS") == "" {
		// A frame takes well under a millisecond; more Ps only wake each
		// other at every frame tick, which costs more than the drawing
		// (about a fifth of the idle CPU; docs/benchmarks.md, part 4).
		runtime.GOMAXPROCS(1)
	}
	m := New(o)
	_, err = tea.NewProgram(m, tea.WithContext(ctx), tea.WithFPS(m.o.FPS)).Run()
	if m.Err() != nil {
		return m.Err()
	}
	if err != nil && !errors.Is(err, tea.ErrInterrupted) {
		return fmt.Errorf("harness top: %w", err)
	}
	return nil
}

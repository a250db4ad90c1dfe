package top

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	tea "charm.land/bubbletea/v2"
	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/errcode"
)

// Run shows the dashboard on this process's terminal, against the daemon
// at socket, until the user quits (nil) or the daemon goes away (an error
// saying so). The terminal is restored either way. o supplies the
// optional parts (Attach, Send, timings); its Backend, Events and Socket
// are set here. The process runs on one P unless GOMAXPROCS is set.
func Run(ctx context.Context, socket string, o Options) error {
	if err := needTerminal(); err != nil {
		return err
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
	return runModel(ctx, o)
}

// RunHosts is Run over several daemons in one view (Fleets): rows tagged
// and grouped by host, each action sent to its row's host. o.Attach, when
// set, is given the row's host address and the host's own unit name
// (HostsAttach); o.Send is set here (the send op on the row's host).
func RunHosts(ctx context.Context, hosts []HostAddr, attach func(addr, unit string) tea.ExecCommand, o Options) error {
	if err := needTerminal(); err != nil {
		return err
	}
	f, err := DialFleets(ctx, hosts)
	if err != nil {
		return err
	}
	defer f.Close()
	addrs := make([]string, len(hosts))
	for i, h := range hosts {
		addrs[i] = h.Addr
	}
	o.Backend, o.Events, o.Socket = f, f.Events(), strings.Join(addrs, ", ")
	if attach != nil {
		o.Attach = func(unit string) tea.ExecCommand {
			addr, name, _ := f.Route(unit)
			return attach(addr, name)
		}
	}
	o.Send = func(ctx context.Context, unit, line string) error {
		return f.Call(ctx, api.OpSend, api.SendArgs{Name: unit, Text: line, Enter: true}, nil)
	}
	return runModel(ctx, o)
}

func needTerminal() error {
	for _, f := range []*os.File{os.Stdin, os.Stdout} {
		if _, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios); err != nil {
			return errcode.Errorf(errcode.InvalidArgument, "harness top needs a terminal (%s is not one)", f.Name())
		}
	}
	return nil
}

func runModel(ctx context.Context, o Options) error {
	if os.Getenv("GOMAXPROCS") == "" {
		// A frame takes well under a millisecond; more Ps only wake each
		// other at every frame tick, which costs more than the drawing
		// (0.54% of a core at 20 fps on two Ps, 0.29% on one;
		// docs/benchmarks.md, part 5).
		runtime.GOMAXPROCS(1)
	}
	m := New(o)
	_, err := tea.NewProgram(m, tea.WithContext(ctx), tea.WithFPS(m.o.FPS)).Run()
	if m.Err() != nil {
		return m.Err()
	}
	if err != nil && !errors.Is(err, tea.ErrInterrupted) {
		return fmt.Errorf("harness top: %w", err)
	}
	return nil
}

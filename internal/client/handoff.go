package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/protocol"
)

// HandoffEnv is the environment variable that turns the stdio hand-off of
// `harness mcp` off: HARNESS_MCP_HANDOFF=0 (or false, off, no) keeps the
// bridge in the data path as a byte pipe.
const HandoffEnv = "HARNESS_MCP_HANDOFF"

// HandoffEnabled reports whether the value of HandoffEnv allows the
// hand-off: unset or empty does, 0, false, off and no do not.
func HandoffEnabled(value string) bool {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "0", "false", "off", "no":
		return false
	}
	return true
}

// MCPOptions is what `harness mcp` presents to the daemon.
type MCPOptions struct {
	// Token is the harness's HARNESS_MCP_TOKEN, or "" (unattributed).
	Token string
	// AllowControl is the --allow-control flag.
	AllowControl bool
	// Handoff lets stdin and stdout be handed to the daemon when they
	// can be (pipes or sockets) and the daemon accepts; otherwise, and
	// when false, the session runs through Bridge.
	Handoff bool
}

// EndGrace bounds how long ServeMCP waits, once ctx is done, for the
// daemon to end a handed-off session and release the client's stdio.
const EndGrace = 5 * time.Second

// ServeMCP runs the MCP session of `harness mcp` until it ends: the token
// is checked in the handshake, then either stdin and stdout are handed to
// the daemon, which serves the session on them directly while this
// process waits on the socket, or, when they cannot be (a terminal, a
// daemon older than protocol 1.1, opt.Handoff false), Bridge copies bytes.
// Ending ctx ends the session (nil). A session the daemon ends early, or a
// daemon lost, is an error saying so.
func ServeMCP(ctx context.Context, socket string, opt MCPOptions, in io.Reader, out io.Writer, errw io.Writer) error {
	stdin, inOK := in.(*os.File)
	stdout, outOK := out.(*os.File)
	offer := opt.Handoff && !IsRemote(socket) && inOK && outOK && protocol.Passable(stdin) && protocol.Passable(stdout)
	nc, w, err := dial(ctx, socket, protocol.Hello{Mode: protocol.ModeMCP, Token: opt.Token,
		AllowControl: opt.AllowControl, Handoff: offer})
	if err != nil {
		return err
	}
	defer nc.Close()
	uc, isUnix := nc.(*net.UnixConn)
	if offer && w.Handoff && isUnix {
		return handOff(ctx, uc, socket, stdin, stdout)
	}
	if w.Handoff {
		return fmt.Errorf("daemon at %s accepted a stdio hand-off that was not offered", socket)
	}
	if err := Bridge(ctx, nc, in, out, errw); err != nil {
		return fmt.Errorf("daemon at %s: %w", socket, err)
	}
	return nil
}

// handOff passes stdin and stdout to the daemon and waits for the session
// to end. On ctx's end it half-closes the socket, which asks the daemon to
// end the session, and waits (EndGrace at most) for its answer.
func handOff(ctx context.Context, uc *net.UnixConn, socket string, stdin, stdout *os.File) error {
	// The daemon sets O_NONBLOCK on the shared descriptions and puts back
	// what it found; if it dies first, this process puts back what it saw.
	modes := saveModes(stdin, stdout)
	if err := protocol.SendStdio(uc, stdin, stdout); err != nil {
		return fmt.Errorf("hand stdio to the daemon at %s: %w: %w", socket, err, errcode.ErrDaemonUnavailable)
	}
	ended := make(chan error, 1)
	go func() { ended <- awaitEnded(uc) }()
	var err error
	select {
	case err = <-ended:
	case <-ctx.Done():
		// Asked to stop (SIGTERM, say): the daemon sees EOF on the socket,
		// ends the session, releases stdio and says so.
		_ = uc.CloseWrite()
		t := time.NewTimer(EndGrace)
		defer t.Stop()
		select {
		case err = <-ended:
			if !errors.Is(err, errLost) {
				err = nil // whatever it reports, the session ended as asked
			}
		case <-t.C:
			_ = uc.Close()
			<-ended
			return fmt.Errorf("the daemon at %s did not end the session within %s of being asked", socket, EndGrace)
		}
	}
	if errors.Is(err, errLost) {
		// No daemon holds the descriptions any more: put their modes back.
		modes.restore()
		return fmt.Errorf("lost the daemon at %s during the session (it stopped or crashed): %w: %w", socket, err, errcode.ErrDaemonUnavailable)
	}
	if err != nil {
		return fmt.Errorf("the daemon at %s ended the session: %w", socket, err)
	}
	return nil
}

// errLost marks a socket that ended without FrameEnded.
var errLost = errors.New("connection lost")

// awaitEnded reads the socket until the daemon's FrameEnded: nil for a
// normal end, the daemon's reason, or errLost.
func awaitEnded(uc *net.UnixConn) error {
	t, payload, err := protocol.ReadFrame(uc, protocol.MaxFrame)
	if err != nil {
		return fmt.Errorf("%w: %w", errLost, err)
	}
	if t != protocol.FrameEnded {
		return fmt.Errorf("unexpected %s frame after the stdio hand-off", t)
	}
	var e protocol.Ended
	if err := json.Unmarshal(payload, &e); err != nil {
		return fmt.Errorf("bad %s frame: %w", t, err)
	}
	if e.Error != nil {
		return &errcode.Remote{Code: e.Error.Code, Message: e.Error.Message}
	}
	return nil
}

// savedModes is the O_NONBLOCK state of files' descriptions as found.
type savedModes struct {
	files    []*os.File
	blocking []bool
}

func saveModes(files ...*os.File) savedModes {
	s := savedModes{files: files, blocking: make([]bool, len(files))}
	for i, f := range files {
		_ = protocol.WithFD(f, func(fd int) {
			flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
			s.blocking[i] = err == nil && flags&unix.O_NONBLOCK == 0
		})
	}
	return s
}

// restore clears O_NONBLOCK on the descriptions that were blocking.
func (s savedModes) restore() {
	for i, f := range s.files {
		if s.blocking[i] {
			_ = protocol.WithFD(f, func(fd int) { _ = unix.SetNonblock(fd, false) })
		}
	}
}

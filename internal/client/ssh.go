package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/errcode"
)

// SSHScheme starts a daemon address that is another machine's daemon,
// reached through the system's OpenSSH client (docs/design/remote.md):
// ssh://[user@]host[:port]. Every function of this package that takes a
// socket path takes such an address too.
const SSHScheme = "ssh://"

// SSHCommandEnv names the variable that replaces the ssh command line
// (split on white space, like GIT_SSH_COMMAND), for options such as -i or
// -F that the user's ssh config does not already carry.
const SSHCommandEnv = "HARNESS_SSH_COMMAND"

// RemoteBinaryEnv names the variable that says what to run on the remote
// host instead of "harness". A key whose authorized_keys line forces a
// command ignores it.
const RemoteBinaryEnv = "HARNESS_REMOTE_BIN"

// IsRemote reports whether addr names a daemon on another host.
func IsRemote(addr string) bool { return strings.HasPrefix(addr, SSHScheme) }

// sshTarget is a parsed ssh:// address.
type sshTarget struct {
	dest string // [user@]host, as ssh takes it
	port string // "" for ssh's default
}

// parseSSH parses ssh://[user@]host[:port], nothing more: no path, query
// or password.
func parseSSH(addr string) (sshTarget, error) {
	u, err := url.Parse(addr)
	if err != nil {
		return sshTarget{}, fmt.Errorf("host %q: %w: %w", addr, err, errcode.ErrInvalidArgument)
	}
	bad := func(why string) error {
		return fmt.Errorf("host %q: %s (want ssh://[user@]host[:port]): %w", addr, why, errcode.ErrInvalidArgument)
	}
	switch {
	case u.Hostname() == "":
		return sshTarget{}, bad("no host")
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "":
		return sshTarget{}, bad("a path, query or fragment is not allowed")
	case strings.HasPrefix(u.Hostname(), "-"):
		return sshTarget{}, bad("a host cannot start with -")
	}
	if _, set := u.User.Password(); set {
		return sshTarget{}, bad("a password is not allowed: use a key")
	}
	t := sshTarget{dest: u.Hostname(), port: u.Port()}
	if name := u.User.Username(); name != "" {
		if strings.HasPrefix(name, "-") {
			return sshTarget{}, bad("a user cannot start with -")
		}
		t.dest = name + "@" + t.dest
	}
	return t, nil
}

// SSHOptions are a host's ssh settings beyond its address (a [host.NAME]
// table): what `harness top` and the page use for a configured host.
type SSHOptions struct {
	// Identity is the private key ssh offers, and only it; "" leaves it
	// to the user's ssh config and agent.
	Identity string
	// Socket is the remote daemon's control socket, for a key without a
	// forced command (the remote command is then `harness --socket
	// SOCKET bridge`).
	Socket string
}

// sshArgv is the command that reaches the bridge on t: the ssh command
// (HARNESS_SSH_COMMAND or "ssh"), no terminal (the protocol is binary),
// and the remote command `harness bridge`.
func sshArgv(t sshTarget, o SSHOptions) []string {
	argv := strings.Fields(os.Getenv(SSHCommandEnv))
	if len(argv) == 0 {
		argv = []string{"ssh"}
	}
	argv = append(argv, "-T", "-o", "BatchMode=yes")
	if o.Identity != "" {
		argv = append(argv, "-i", o.Identity, "-o", "IdentitiesOnly=yes")
	}
	if t.port != "" {
		argv = append(argv, "-p", t.port)
	}
	remote := os.Getenv(RemoteBinaryEnv)
	if remote == "" {
		remote = "harness"
	}
	argv = append(argv, "--", t.dest, remote)
	if o.Socket != "" {
		argv = append(argv, "--socket", o.Socket)
	}
	return append(argv, "bridge")
}

// dialSSH starts ssh to addr and returns its stdin and stdout as a
// net.Conn. The remote side is `harness bridge`, which speaks the socket
// protocol on its stdio. Pipes are made with os.Pipe so that deadlines
// work on them (the handshake and ctx cancellation rely on them).
func dialSSH(ctx context.Context, addr string, o SSHOptions) (net.Conn, error) {
	t, err := parseSSH(addr)
	if err != nil {
		return nil, err
	}
	argv := sshArgv(t, o)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", addr, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("host %s: %w", addr, err)
	}
	c := &sshConn{addr: addr, in: inW, out: outR, exited: make(chan struct{})}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, &c.stderr
	err = cmd.Start()
	// The child holds its own copies now (or never will).
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("host %s: start %s: %w: %w", addr, argv[0], err, errcode.ErrDaemonUnavailable)
	}
	c.cmd = cmd
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	if ctx.Err() != nil {
		c.Close()
		return nil, fmt.Errorf("host %s: %w", addr, ctx.Err())
	}
	return c, nil
}

// sshConn is a connection to a remote daemon through an ssh process.
type sshConn struct {
	addr    string
	cmd     *exec.Cmd
	in      *os.File // the ssh process's stdin
	out     *os.File // its stdout
	stderr  tailBuffer
	exited  chan struct{}
	waitErr error

	closeOnce sync.Once
}

// Read reads the remote daemon's bytes. When ssh ends, the error says
// why in one line: what ssh or the remote shell printed last ("Connection
// refused", "harness: command not found").
func (c *sshConn) Read(p []byte) (int, error) {
	n, err := c.out.Read(p)
	if errors.Is(err, io.EOF) {
		return n, c.ended(err)
	}
	return n, err
}

// Write sends bytes to the remote daemon.
func (c *sshConn) Write(p []byte) (int, error) {
	n, err := c.in.Write(p)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		return n, c.ended(err)
	}
	return n, err
}

// ended waits briefly for ssh's exit and turns err into one that names
// the host and what ssh said, keeping err for errors.Is (io.EOF marks a
// lost daemon for the callers).
func (c *sshConn) ended(err error) error {
	select {
	case <-c.exited:
	case <-time.After(2 * time.Second):
	}
	if line := c.stderr.lastLine(); line != "" {
		return fmt.Errorf("host %s: %s: %w", c.addr, line, err)
	}
	return fmt.Errorf("host %s: ssh ended: %w", c.addr, err)
}

// Close ends the connection and the ssh process.
func (c *sshConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		err = errors.Join(c.in.Close(), c.out.Close())
		select {
		case <-c.exited:
		case <-time.After(2 * time.Second):
			// ssh normally exits on its stdin's EOF; one that does not is ended.
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
	})
	return err
}

// CloseWrite half-closes the connection: the remote side reads EOF.
func (c *sshConn) CloseWrite() error { return c.in.Close() }

func (c *sshConn) LocalAddr() net.Addr  { return sshAddr("local") }
func (c *sshConn) RemoteAddr() net.Addr { return sshAddr(c.addr) }

func (c *sshConn) SetDeadline(t time.Time) error {
	return errors.Join(c.in.SetWriteDeadline(t), c.out.SetReadDeadline(t))
}
func (c *sshConn) SetReadDeadline(t time.Time) error  { return c.out.SetReadDeadline(t) }
func (c *sshConn) SetWriteDeadline(t time.Time) error { return c.in.SetWriteDeadline(t) }

// sshAddr names an end of an sshConn.
type sshAddr string

func (a sshAddr) Network() string { return "ssh" }
func (a sshAddr) String() string  { return string(a) }

// tailBuffer keeps the last few KiB written to it (ssh's stderr), for the
// one line that says why a host could not be reached.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 4 << 10

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > tailMax {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-tailMax:]...)
	}
	return len(p), nil
}

// lastLine is the last non-empty line written, trimmed.
func (b *tailBuffer) lastLine() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := bytes.Split(bytes.TrimSpace(b.buf), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(string(lines[i])); l != "" {
			return l
		}
	}
	return ""
}

// Package sshtest starts a real OpenSSH server on loopback for the tests
// and the benchmark of remote operation (docs/design/remote.md): a temp host key,
// client keys each with its own forced command, and the client's
// HARNESS_SSH_COMMAND to reach it. It needs Debian's openssh-server
// (scripts/test installs it) and runs as the current user.
package sshtest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sshd is where OpenSSH's server is on Debian.
const Sshd = "/usr/sbin/sshd"

// Key is a client key of the server and what it may run.
type Key struct {
	Name    string // file name under the server's dir
	Command string // the forced command; "" for none
}

// Server is a running sshd.
type Server struct {
	Dir  string
	Port int
	User string

	cmd    *exec.Cmd
	exited chan struct{}
	stderr bytes.Buffer
}

// Start starts sshd -D on a free loopback port, writing its keys and
// config under dir, and returns once it accepts connections.
func Start(dir string, keys ...Key) (*Server, error) {
	if _, err := os.Stat(Sshd); err != nil {
		return nil, fmt.Errorf("%s is needed (Debian's openssh-server; scripts/test installs it): %w", Sshd, err)
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // its privilege separation directory
		return nil, err
	}
	u, err := user.Current()
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, User: u.Username, exited: make(chan struct{})}
	if err := s.keygen("hostkey"); err != nil {
		return nil, err
	}
	var auth strings.Builder
	for _, k := range keys {
		if err := s.keygen(k.Name); err != nil {
			return nil, err
		}
		pub, err := os.ReadFile(filepath.Join(dir, k.Name+".pub"))
		if err != nil {
			return nil, err
		}
		if k.Command != "" {
			fmt.Fprintf(&auth, "command=%q,no-pty,no-port-forwarding,no-agent-forwarding ", k.Command)
		}
		auth.Write(pub)
	}
	authPath := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authPath, []byte(auth.String()), 0o600); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.Port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	conf := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
PidFile %s
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
LogLevel ERROR
`, s.Port, filepath.Join(dir, "hostkey"), authPath, filepath.Join(dir, "sshd.pid"))
	confPath := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	s.cmd = exec.Command(Sshd, "-D", "-e", "-f", confPath)
	s.cmd.Stderr = &s.stderr
	s.cmd.SysProcAttr = dieWithParent()
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)), time.Second)
		if err == nil {
			c.Close()
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("sshd exited: %s", s.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			s.Close()
			return nil, fmt.Errorf("sshd never listened on %d: %w", s.Port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *Server) keygen(name string) error {
	out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", filepath.Join(s.Dir, name)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ssh-keygen %s: %w: %s", name, err, out)
	}
	return nil
}

// Host is the --host address of the server.
func (s *Server) Host() string {
	return fmt.Sprintf("ssh://%s@127.0.0.1:%d", s.User, s.Port)
}

// SSHCommand is the HARNESS_SSH_COMMAND of a client using key: no user
// ssh config, no host-key prompt, extra options after.
func (s *Server) SSHCommand(key string, extra ...string) string {
	return strings.Join(append([]string{"ssh", "-F", "/dev/null", "-i", filepath.Join(s.Dir, key),
		"-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "LogLevel=ERROR"}, extra...), " ")
}

// Close stops sshd.
func (s *Server) Close() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		return nil
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return errors.New("sshd did not exit within 10s of SIGTERM")
	}
}

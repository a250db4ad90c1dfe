package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

var (
	probeOnce sync.Once
	probed    Caps
)

// Probe is what this machine offers, found once per process: the Landlock
// ABI, whether the shim can start in new user and network namespaces, and
// mount over /tmp in them (tried for real: sysctls, AppArmor and seccomp
// all have a say).
func Probe() Caps {
	probeOnce.Do(func() { probed = probe() })
	return probed
}

func probe() Caps {
	var c Caps
	abi, err := ABI()
	if err != nil {
		c.Why = "landlock: " + err.Error()
	}
	c.Landlock = abi
	exe, err := self()
	if err != nil {
		c.Why = err.Error()
		return c
	}
	cmd := exec.Command(exe, Subcommand, "--probe")
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	namespaces(cmd.SysProcAttr, true)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		c.UserNS, c.MountNS = true, true
	case errors.As(err, &ee) && ee.ExitCode() == probeNoMount:
		c.UserNS = true
		c.Why = fmt.Sprintf("mount namespace: %s", out)
	default:
		c.Why = fmt.Sprintf("namespaces: %v %s", err, out)
	}
	return c
}

// namespaces makes a spawn with attrs start in new user and mount
// namespaces, and a network namespace with net, as the same user and
// group inside.
func namespaces(attrs *syscall.SysProcAttr, net bool) {
	attrs.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS
	if net {
		attrs.Cloneflags |= syscall.CLONE_NEWNET
	}
	uid, gid := os.Getuid(), os.Getgid()
	attrs.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	attrs.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	attrs.GidMappingsEnableSetgroups = false
}

// Wrapped is a spawn rewritten to go through the shim.
type Wrapped struct {
	// channel is the daemon's end of the channel the shim sends the proxy
	// listener on (network = "allow"); nil otherwise.
	channel *os.File
	child   *os.File
}

// Wrap rewrites cmd (not started) to run through the shim with spec, and
// attrs to start it in new namespaces when spec asks for them. The caller
// calls Started once the start was attempted.
func Wrap(cmd *exec.Cmd, attrs *syscall.SysProcAttr, spec Spec) (*Wrapped, error) {
	exe, err := self()
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("sandbox: spec: %w", err)
	}
	w := &Wrapped{}
	if spec.Net == NetAllow {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("sandbox: channel: %w", err)
		}
		w.channel = os.NewFile(uintptr(fds[0]), "sandbox-channel")
		w.child = os.NewFile(uintptr(fds[1]), "sandbox-channel-child")
		if len(cmd.ExtraFiles) > 0 {
			w.Close()
			return nil, fmt.Errorf("sandbox: the spawn already passes extra files")
		}
		cmd.ExtraFiles = []*os.File{w.child} // fd 3 in the shim
	}
	args := append([]string{exe, Subcommand, string(js), cmd.Path}, cmd.Args...)
	cmd.Path, cmd.Args = exe, args
	if spec.Namespaced() {
		namespaces(attrs, spec.Net != "")
	}
	return w, nil
}

// Started releases the child's end of the channel after the start.
func (w *Wrapped) Started() {
	if w.child != nil {
		w.child.Close()
		w.child = nil
	}
}

// Close releases both ends; the listener, if it came, is the caller's.
func (w *Wrapped) Close() {
	w.Started()
	if w.channel != nil {
		w.channel.Close()
		w.channel = nil
	}
}

// Listener waits (up to d) for the proxy listener the shim made inside
// the namespace; it blocks, so it runs off the actor.
func (w *Wrapped) Listener(d time.Duration) (net.Listener, error) {
	if w.channel == nil {
		return nil, fmt.Errorf("sandbox: no channel")
	}
	defer w.Close()
	c, err := net.FileConn(w.channel)
	if err != nil {
		return nil, fmt.Errorf("sandbox: channel: %w", err)
	}
	defer c.Close()
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil, fmt.Errorf("sandbox: channel is %T", c)
	}
	if err := uc.SetReadDeadline(time.Now().Add(d)); err != nil {
		return nil, err
	}
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("sandbox: no listener from the shim: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("sandbox: listener message: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("sandbox: listener rights: %v", err)
	}
	f := os.NewFile(uintptr(fds[0]), "sandbox-proxy")
	defer f.Close()
	l, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("sandbox: listener: %w", err)
	}
	return l, nil
}

//go:build !linux

package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// errNotLinux says what is not enforced here: neither files nor network.
var errNotLinux = errors.New("sandboxing needs Linux (Landlock and namespaces); nothing is enforced on this system")

// ExitSetup is the shim's exit status when the sandbox cannot be set up.
const ExitSetup = 126

// Probe reports that nothing can be enforced on this system.
func Probe() Caps { return Caps{Why: errNotLinux.Error()} }

// ABI is 0: no Landlock here.
func ABI() (int, error) { return 0, nil }

// Exec refuses: there is no shim outside Linux.
func Exec(args []string) int {
	fmt.Fprintf(os.Stderr, "harness sandbox: %v\n", errNotLinux)
	return ExitSetup
}

// Wrapped is a spawn rewritten to go through the shim (Linux only).
type Wrapped struct{}

// Wrap refuses: Plan never yields a spec to apply here.
func Wrap(cmd *exec.Cmd, attrs *syscall.SysProcAttr, spec Spec) (*Wrapped, error) {
	return nil, errNotLinux
}

// Started does nothing.
func (w *Wrapped) Started() {}

// Close does nothing.
func (w *Wrapped) Close() {}

// Listener fails: no namespaces here.
func (w *Wrapped) Listener(d time.Duration) (net.Listener, error) { return nil, errNotLinux }

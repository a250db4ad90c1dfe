package control

import (
	"context"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// Devices is the listener for people as control drives it (the daemon's:
// the device store, the certificate, the URL a phone opens;
// docs/design/web.md). nil: no [web] listen, and pair says so.
type Devices interface {
	// Pair makes a single-use pairing code and the URL that carries it.
	Pair(api.PairArgs) (api.PairResult, error)
	// List lists the paired devices.
	List() []api.DeviceInfo
	// Revoke ends a device at once; unknown is not_found.
	Revoke(name string) (api.DeviceInfo, error)
	// Info is daemon_info's view: the listener's URL, its certificate's
	// fingerprint, and why it does not serve ("" when it does).
	Info() (url, fingerprint, failure string)
}

// errNoListener answers pair when no listener for people serves.
var errNoListener = errcode.Errorf(errcode.InvalidArgument, "no listener for people: set [web] listen (and tls = \"auto\" beyond loopback) in harness.toml and restart the daemon")

// Pair answers `pair`: a code and URL that sign one device in with grant.
func (c *Control) Pair(_ context.Context, a api.PairArgs) (api.PairResult, error) {
	if c.opt.Devices == nil {
		return api.PairResult{}, errNoListener
	}
	return c.opt.Devices.Pair(a)
}

// DevicesList answers `devices`.
func (c *Control) DevicesList(context.Context, api.NoArgs) ([]api.DeviceInfo, error) {
	if c.opt.Devices == nil {
		return []api.DeviceInfo{}, nil
	}
	return c.opt.Devices.List(), nil
}

// DevicesRevoke answers `devices_revoke`.
func (c *Control) DevicesRevoke(_ context.Context, a api.DeviceArg) (api.DeviceInfo, error) {
	if c.opt.Devices == nil {
		return api.DeviceInfo{}, errcode.ErrNotFound.Errorf("no device %s: none is paired", errcode.Quote(a.Name))
	}
	return c.opt.Devices.Revoke(a.Name)
}

package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/control"
	"github.com/harness-dev/harness/internal/hosts"
	"github.com/harness-dev/harness/internal/web"
)

// remoteFleets follows the machines of the [host.NAME] tables for the
// page (docs/design/web.md): their fleets through the SSH bridge, and
// their events to the notifier for a host with notify = true. The hosts
// are read at start; a reload does not change them.
type remoteFleets struct {
	pool *hosts.Pool
	dash atomic.Pointer[web.Server]
	ctl  *control.Control
}

// startRemoteFleets starts following cfg's hosts; nil when it has none.
// observe takes a notify host's events, its units named "HOST:NAME".
func startRemoteFleets(ctl *control.Control, observe func(api.Event), log *slog.Logger) *remoteFleets {
	cfg := ctl.Config()
	if len(cfg.Hosts) == 0 {
		return nil
	}
	names := make([]string, 0, len(cfg.Hosts))
	for n := range cfg.Hosts {
		names = append(names, n)
	}
	slices.Sort(names)
	var list []hosts.Host
	notify := map[string]bool{}
	for _, n := range names {
		h := cfg.Hosts[n]
		list = append(list, hosts.Host{Name: n, Addr: h.SSH, SSH: client.SSHOptions{Identity: h.Identity, Socket: h.Socket}})
		notify[n] = h.Notify
	}
	r := &remoteFleets{ctl: ctl}
	opt := hosts.Options{Hosts: list, Logger: log,
		OnChange: func(host string) {
			if d := r.dash.Load(); d != nil {
				d.RemoteChanged(host)
			}
		},
	}
	if observe != nil {
		opt.OnEvent = func(host string, ev api.Event) {
			if notify[host] && ev.Unit != "" {
				ev.Unit = host + ":" + ev.Unit
				observe(ev)
			}
		}
	}
	r.pool = hosts.Start(opt)
	return r
}

func (r *remoteFleets) close() {
	if r != nil {
		r.pool.Close()
	}
}

// remotes is the page's view of them; nil when there are none.
func (r *remoteFleets) remotes() web.Remotes {
	if r == nil {
		return nil
	}
	return r
}

// Fleets are the hosts' last views.
func (r *remoteFleets) Fleets() []web.RemoteFleet {
	vs := r.pool.Views()
	out := make([]web.RemoteFleet, len(vs))
	for i, v := range vs {
		out[i] = web.RemoteFleet{Name: v.Name, Addr: v.Addr, Units: v.Units, Read: v.Read, Bridged: v.Bridged, Grant: v.Grant, Err: v.Err}
	}
	return out
}

// Call runs op on host, and records it in this daemon's audit log as
// the page's caller did it to "HOST:NAME".
func (r *remoteFleets) Call(ctx context.Context, caller api.Caller, host, op string, args, result any) error {
	err := r.pool.Call(ctx, host, op, args, result)
	var named struct {
		Name string `json:"name"`
	}
	if b, merr := json.Marshal(args); merr == nil {
		_ = json.Unmarshal(b, &named)
	}
	r.ctl.AuditRemote(caller, op, host+":"+named.Name, err)
	return err
}

// isRemoteName reports whether a notified harness name is another
// machine's ("HOST:NAME"): local names have no colon.
func isRemoteName(name string) (host string, ok bool) {
	host, _, ok = strings.Cut(name, ":")
	return host, ok
}

package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/control"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/hosts"
	"github.com/harness-dev/harness/internal/web"
)

// remoteFleets follows the machines of the [host.NAME] tables for the
// page (docs/design/web.md): their fleets through the SSH bridge, and
// their events to the notifier for a host with notify = true. A reload
// that changes the tables follows the new ones (a new pool; the old one
// ends in the background, as an ssh may take a moment to exit).
type remoteFleets struct {
	dash    atomic.Pointer[web.Server]
	ctl     *control.Control
	observe func(api.Event)
	log     *slog.Logger

	mu     sync.Mutex
	pool   *hosts.Pool // nil without hosts
	hosts  map[string]config.Host
	closed bool // the daemon is ending: a late reload starts nothing
}

// startRemoteFleets starts following the config's hosts (none is fine: a
// reload may add some). observe takes a notify host's events, its units
// named "HOST:NAME".
func startRemoteFleets(ctl *control.Control, observe func(api.Event), log *slog.Logger) *remoteFleets {
	r := &remoteFleets{ctl: ctl, observe: observe, log: log}
	r.apply(ctl.Config())
	return r
}

// apply follows cfg's hosts, unless they are the ones followed already.
func (r *remoteFleets) apply(cfg *config.Config) {
	want := map[string]config.Host{}
	for n, h := range cfg.Hosts {
		want[n] = *h
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || (maps.Equal(want, r.hosts) && (r.pool != nil || len(want) == 0)) {
		return
	}
	opt := r.options(want)
	if old := r.pool; old != nil {
		opt.Last = map[string]hosts.View{}
		for _, v := range old.Views() {
			opt.Last[v.Name] = v
		}
		go old.Close()
	}
	r.hosts, r.pool = want, nil
	if len(want) > 0 {
		r.pool = hosts.Start(opt)
	}
	if d := r.dash.Load(); d != nil {
		d.RemoteChanged("")
	}
}

func (r *remoteFleets) options(want map[string]config.Host) hosts.Options {
	var list []hosts.Host
	for _, n := range slices.Sorted(maps.Keys(want)) {
		h := want[n]
		list = append(list, hosts.Host{Name: n, Addr: h.SSH, SSH: client.SSHOptions{Identity: h.Identity, Socket: h.Socket}})
	}
	opt := hosts.Options{Hosts: list, Logger: r.log,
		OnChange: func(host string) {
			if d := r.dash.Load(); d != nil {
				d.RemoteChanged(host)
			}
		},
	}
	if r.observe != nil {
		opt.OnEvent = func(host string, ev api.Event) {
			if want[host].Notify && ev.Unit != "" {
				ev.Unit = host + ":" + ev.Unit
				r.observe(ev)
			}
		}
	}
	return opt
}

func (r *remoteFleets) current() *hosts.Pool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pool
}

func (r *remoteFleets) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	p := r.pool
	r.pool, r.closed = nil, true
	r.mu.Unlock()
	if p != nil {
		p.Close()
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
	p := r.current()
	if p == nil {
		return nil
	}
	vs := p.Views()
	out := make([]web.RemoteFleet, len(vs))
	for i, v := range vs {
		out[i] = web.RemoteFleet{Name: v.Name, Addr: v.Addr, Units: v.Units, Read: v.Read, Bridged: v.Bridged, Grant: v.Grant, Err: v.Err}
	}
	return out
}

// Call runs op on host, and records it in this daemon's audit log as
// the page's caller did it to "HOST:NAME".
func (r *remoteFleets) Call(ctx context.Context, caller api.Caller, host, op string, args, result any) error {
	p := r.current()
	if p == nil {
		return errcode.Errorf(errcode.InvalidArgument, "no host %s: the config names none", errcode.Quote(host))
	}
	err := p.Call(ctx, host, op, args, result)
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

package top

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/errcode"
)

// Several hosts in one dashboard (`harness top --host a --host b`,
// docs/design/remote.md). Fleets is a Backend over one connection per daemon: the
// model sees one fleet whose names carry their host, "LABEL/NAME", and
// whose projects are "LABEL" (the host's global scope) or
// "LABEL/PROJECT", so the table groups by host and then by project, and
// every operation on a row goes to the row's host with the host's own
// name for it. A host that cannot be reached, or that goes away, is a
// heading that says so; the dashboard ends only when every host is gone.

// hostDialTimeout bounds connecting to one host (ssh and the handshake).
const hostDialTimeout = 20 * time.Second

// HostAddr is one daemon of a several-host dashboard.
type HostAddr struct {
	// Label tags the host's rows; it has no '/'.
	Label string
	// Addr is the daemon's control socket or ssh:// address (internal/client).
	Addr string
	// SSH are the host's ssh settings (a [host.NAME] table's identity
	// and socket).
	SSH client.SSHOptions
}

// HostState is a host as the dashboard shows it: Down says why it has no
// rows (unreachable, or the connection was lost); "" while it is live.
type HostState struct {
	Label, Addr, Down string
}

// hostSource is one host's connection: its operations and its events
// (nil when it could not be reached).
type hostSource struct {
	HostAddr
	backend Backend
	events  <-chan api.Event
	close   func()
	down    string
}

// Fleets is the dashboard's Backend over several daemons.
type Fleets struct {
	hosts  []*hostSource
	byName map[string]*hostSource
	events chan api.Event

	mu   sync.Mutex
	live int
	wg   sync.WaitGroup
	stop chan struct{}
	once sync.Once
}

// DialFleets connects to every host at once and subscribes to its
// events. A host that cannot be reached is kept, down, with the error's
// one line; it is an error only when no host can be reached.
func DialFleets(ctx context.Context, addrs []HostAddr) (*Fleets, error) {
	srcs := make([]*hostSource, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		srcs[i] = &hostSource{HostAddr: a}
		wg.Add(1)
		go func(s *hostSource) {
			defer wg.Done()
			// A host that drops packets must not hold the others' view.
			dctx, cancel := context.WithTimeout(ctx, hostDialTimeout)
			defer cancel()
			c, err := client.DialWith(dctx, s.Addr, s.SSH)
			if err != nil {
				s.down = "unreachable: " + oneLine(err)
				return
			}
			subCtx, cancel := context.WithCancel(context.Background())
			events, err := c.Subscribe(subCtx)
			if err != nil {
				cancel()
				c.Close()
				s.down = "unreachable: " + oneLine(err)
				return
			}
			s.backend, s.events = c, events
			s.close = func() { cancel(); c.Close() }
		}(srcs[i])
	}
	wg.Wait()
	f := newFleets(srcs)
	if f.live == 0 {
		var lines []string
		for _, s := range srcs {
			lines = append(lines, s.Label+": "+s.down)
		}
		return nil, fmt.Errorf("no host could be reached: %s: %w", strings.Join(lines, "; "), errcode.ErrDaemonUnavailable)
	}
	return f, nil
}

// newFleets joins the hosts' event streams into one, each event's unit
// named with its host.
func newFleets(srcs []*hostSource) *Fleets {
	f := &Fleets{hosts: srcs, byName: map[string]*hostSource{}, events: make(chan api.Event, 64), stop: make(chan struct{})}
	for _, s := range srcs {
		f.byName[s.Label] = s
		if s.down == "" {
			f.live++
		}
	}
	for _, s := range srcs {
		if s.down != "" {
			continue
		}
		f.wg.Add(1)
		go f.forward(s)
	}
	if f.live == 0 {
		close(f.events)
	}
	return f
}

// forward passes one host's events on, renamed; when its stream ends
// the host is down and the model re-lists (a reload event) to drop its
// rows.
func (f *Fleets) forward(s *hostSource) {
	defer f.wg.Done()
	for {
		var ev api.Event
		var ok bool
		select {
		case ev, ok = <-s.events:
		case <-f.stop:
			return
		}
		if !ok {
			break
		}
		if ev.Unit != "" {
			ev.Unit = qualify(s.Label, ev.Unit)
		}
		select {
		case f.events <- ev:
		case <-f.stop:
			return
		}
	}
	f.lost(s, "lost the connection (the daemon stopped or went away)")
}

// lost marks a live host down and tells the model, or ends the stream
// when it was the last one.
func (f *Fleets) lost(s *hostSource, why string) {
	f.mu.Lock()
	if s.down != "" {
		f.mu.Unlock()
		return
	}
	s.down = why
	f.live--
	last := f.live == 0
	f.mu.Unlock()
	if last {
		f.once.Do(func() { close(f.events) })
		return
	}
	select {
	case f.events <- api.Event{Kind: api.EventReload}:
	case <-f.stop:
	}
}

// Events is the joined subscription; it ends when every host is down.
func (f *Fleets) Events() <-chan api.Event { return f.events }

// Hosts says which hosts are live and why the others are not, in the
// order they were given.
func (f *Fleets) Hosts() []HostState {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]HostState, len(f.hosts))
	for i, s := range f.hosts {
		out[i] = HostState{Label: s.Label, Addr: s.Addr, Down: s.down}
	}
	return out
}

// Route splits a dashboard name into its host's address and the host's
// own name for the unit.
func (f *Fleets) Route(name string) (addr, unit string, ok bool) {
	s, unit, err := f.route(name)
	if err != nil {
		return "", "", false
	}
	return s.Addr, unit, true
}

// Close ends every connection and the forwarding goroutines.
func (f *Fleets) Close() {
	close(f.stop)
	for _, s := range f.hosts {
		if s.close != nil {
			s.close()
		}
	}
	f.wg.Wait()
}

// DroppedEvents adds up what the hosts' subscriptions lost.
func (f *Fleets) DroppedEvents() uint64 {
	var n uint64
	for _, s := range f.hosts {
		if s.backend != nil {
			n += s.backend.DroppedEvents()
		}
	}
	return n
}

func qualify(label, name string) string { return label + "/" + name }

func qualifyProject(label, project string) string {
	if project == "" {
		return label
	}
	return label + "/" + project
}

func (f *Fleets) route(name string) (*hostSource, string, error) {
	label, unit, ok := strings.Cut(name, "/")
	s := f.byName[label]
	if !ok || s == nil || unit == "" {
		return nil, "", errcode.Errorf(errcode.InvalidArgument, "%q names no host of this dashboard", name)
	}
	return s, unit, nil
}

// liveHosts are the hosts that are up now.
func (f *Fleets) liveHosts() []*hostSource {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*hostSource
	for _, s := range f.hosts {
		if s.down == "" {
			out = append(out, s)
		}
	}
	return out
}

// callHost runs one operation on one host. Losing the host is not the
// dashboard's end: the host goes down and the error says which it was,
// without the daemon_unavailable code the model would end on.
func (f *Fleets) callHost(ctx context.Context, s *hostSource, op string, args, result any) error {
	f.mu.Lock()
	down := s.down
	f.mu.Unlock()
	if down != "" {
		return fmt.Errorf("host %s is down: %s", s.Label, down)
	}
	err := s.backend.Call(ctx, op, args, result)
	if errors.Is(err, errcode.ErrDaemonUnavailable) {
		go f.lost(s, "lost the connection: "+oneLine(err))
		return fmt.Errorf("host %s: %s", s.Label, oneLine(err))
	}
	if err != nil {
		return fmt.Errorf("host %s: %w", s.Label, err)
	}
	return nil
}

// Call runs op: list, mcp_status and reload on every live host, merged;
// anything else on the host its name says.
func (f *Fleets) Call(ctx context.Context, op string, args, result any) error {
	switch op {
	case api.OpList:
		var all []unitRow
		for _, s := range f.liveHosts() {
			var us []unitRow
			if err := f.callHost(ctx, s, op, args, &us); err != nil {
				if !isRemote(err) {
					continue // the host is down now; its heading says so
				}
				return err
			}
			for i := range us {
				us[i].Name = qualify(s.Label, us[i].Name)
				us[i].Project = qualifyProject(s.Label, us[i].Project)
			}
			all = append(all, us...)
		}
		return assign(result, all)
	case api.OpMCPStatus:
		var all []api.UpstreamStatus
		for _, s := range f.liveHosts() {
			var ups []api.UpstreamStatus
			if err := f.callHost(ctx, s, op, args, &ups); err != nil {
				if !isRemote(err) {
					continue
				}
				return err
			}
			for i := range ups {
				ups[i].Project = qualifyProject(s.Label, ups[i].Project)
			}
			all = append(all, ups...)
		}
		return assign(result, all)
	case api.OpReload:
		var sum api.ReloadResult
		for _, s := range f.liveHosts() {
			var r api.ReloadResult
			if err := f.callHost(ctx, s, op, args, &r); err != nil {
				return err
			}
			for _, l := range []*[]string{&r.Added, &r.Removed, &r.Changed} {
				for i := range *l {
					(*l)[i] = qualify(s.Label, (*l)[i])
				}
			}
			sum.Added = append(sum.Added, r.Added...)
			sum.Removed = append(sum.Removed, r.Removed...)
			sum.Changed = append(sum.Changed, r.Changed...)
			for _, w := range r.Warnings {
				sum.Warnings = append(sum.Warnings, s.Label+": "+w)
			}
		}
		return assign(result, sum)
	}
	s, args, err := f.routeArgs(args)
	if err != nil {
		return err
	}
	if err := f.callHost(ctx, s, op, args, result); err != nil {
		return err
	}
	switch r := result.(type) {
	case *unitRow:
		r.Name = qualify(s.Label, r.Name)
		r.Project = qualifyProject(s.Label, r.Project)
	case *api.ActionResult:
		for i := range r.Results {
			r.Results[i].Name = qualify(s.Label, r.Results[i].Name)
		}
	case *api.TriggerResult:
		r.Name = qualify(s.Label, r.Name)
	}
	return nil
}

// routeArgs finds the host of an operation on one unit and gives back
// the arguments with the host's own name for it.
func (f *Fleets) routeArgs(args any) (*hostSource, any, error) {
	var name *string
	switch a := args.(type) {
	case api.NameArg:
		name = &a.Name
		args = &a
	case api.NamesArgs:
		if len(a.Names) != 1 || a.All {
			return nil, nil, errcode.Errorf(errcode.InvalidArgument, "a dashboard of several hosts acts on one harness at a time")
		}
		a.Names = []string{a.Names[0]} // a copy: the caller's slice stays as it was
		name = &a.Names[0]
		args = &a
	case api.LogsArgs:
		name = &a.Name
		args = &a
	case api.RunsArgs:
		name = &a.Name
		args = &a
	case api.TriggerArgs:
		name = &a.Name
		args = &a
	case api.SendArgs:
		name = &a.Name
		args = &a
	default:
		return nil, nil, errcode.Errorf(errcode.InvalidArgument, "top: operation arguments %T name no host", args)
	}
	s, unit, err := f.route(*name)
	if err != nil {
		return nil, nil, err
	}
	*name = unit
	return s, args, nil
}

// assign stores v in result, a pointer to v's type.
func assign[T any](result any, v T) error {
	p, ok := result.(*T)
	if !ok {
		return fmt.Errorf("top: result %T, want *%T", result, v)
	}
	*p = v
	return nil
}

// isRemote reports whether err is a daemon's refusal (which the user
// should see) rather than the host's connection failing.
func isRemote(err error) bool {
	var r *errcode.Remote
	return errors.As(err, &r)
}

// oneLine is err's message on one line.
func oneLine(err error) string {
	s := strings.TrimSpace(err.Error())
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// hostsBackend is a Backend over several hosts (Fleets): the table groups
// its rows by host.
type hostsBackend interface {
	Backend
	Hosts() []HostState
}

// groupByHost regroups rows built from a several-host fleet (projects
// "LABEL" and "LABEL/PROJECT"): per host in the given order, a heading
// "host LABEL" (saying why when it is down), its global scope's rows,
// then each of its projects under "LABEL · project P". A live host the
// filter empties is left out; a down one always shows.
func groupByHost(rows []row, hosts []HostState, filter string) []row {
	byHost := map[string][]row{}
	for _, r := range rows {
		if r.kind == rowGroup {
			continue // buildRows' headings: made again below
		}
		label, project, _ := strings.Cut(r.project, "/")
		r.project = project
		byHost[label] = append(byHost[label], r)
	}
	out := make([]row, 0, len(rows)+2*len(hosts))
	for _, h := range hosts {
		rs := byHost[h.Label]
		head := row{kind: rowGroup, project: h.Label, text: "host " + h.Label}
		switch {
		case h.Down != "":
			head.text += ": " + h.Down
		case len(rs) == 0 && filter != "":
			continue
		case len(rs) == 0:
			head.text += ": no harnesses"
		}
		out = append(out, head)
		project := ""
		for _, r := range rs { // buildRows sorted them: global scope first, then by project
			if r.project != project {
				project = r.project
				out = append(out, row{kind: rowGroup, project: h.Label + "/" + project, text: h.Label + " · project " + project})
			}
			r.project = qualifyProject(h.Label, r.project)
			out = append(out, r)
		}
	}
	return out
}

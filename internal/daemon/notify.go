package daemon

import (
	"context"
	"log/slog"
	"os"
	"strings"

	"github.com/harness-dev/harness/internal/actionlink"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/control"
	"github.com/harness-dev/harness/internal/mask"
	"github.com/harness-dev/harness/internal/notify"
	"github.com/harness-dev/harness/internal/proctree"
)

// newNotifier builds the notifier (docs/design/events.md) on control's view of the
// fleet, masking with the daemon's one masker (docs/design/masking.md), with a link to the
// harness's dashboard page (docs/design/web.md) when the HTTP listener serves one.
func newNotifier(ctl *control.Control, reaper *proctree.Reaper, own *ownership, instance string, m *mask.Masker, web *httpEndpoint, people *peopleListener, tn *tailnetDoor, links *actionlink.Store, log *slog.Logger) *notify.Notifier {
	host, _ := os.Hostname()
	var dashboard func(string) string
	var publicURL func() string
	// The page's address for a person: the listener for people's (its
	// public_url, else its own address), else the tailnet node's once it
	// is up, else the dashboard on the MCP HTTP listener.
	fixed := ""
	switch {
	case people != nil && people.url != "":
		fixed = strings.TrimSuffix(people.url, "/") + "/"
	case web != nil:
		fixed = web.dashURL
	}
	base := func() string {
		if people == nil || people.url == "" {
			if u := tn.url(); u != "" {
				return strings.TrimSuffix(u, "/") + "/"
			}
		}
		return fixed
	}
	if fixed != "" || tn != nil {
		dashboard = func(name string) string {
			b := base()
			if _, remote := isRemoteName(name); remote || b == "" {
				return b // another machine's row is on the fleet page
			}
			return b + "h/" + name
		}
		// Action links go to [web] public_url, else to that address,
		// read at each message so a reload applies.
		publicURL = func() string {
			if p := ctl.Config().Web.PublicURL; p != "" {
				return p
			}
			return base()
		}
	} else {
		links = nil // no page serves them
	}
	return notify.New(notify.Options{
		Dashboard: dashboard,
		Links:     links,
		PublicURL: publicURL,
		Source:    notifySource{ctl},
		Host:      host,
		Mask:      m.Func(),
		Reaper:    reaper,
		Cgroups:   own.tree,
		Instance:  instance,
		Logger:    log,
	})
}

// notifySource answers the notifier from control.
type notifySource struct{ ctl *control.Control }

func (s notifySource) Harness(name string) (notify.HarnessInfo, bool) {
	c := s.ctl
	if host, ok := isRemoteName(name); ok {
		h := c.Config().Hosts[host]
		if h == nil || !h.Notify {
			return notify.HarnessInfo{}, false
		}
		return notify.HarnessInfo{Remote: true, HostName: host, HostAddr: h.SSH, Unit: strings.TrimPrefix(name, host+":")}, true
	}
	h, ok := c.HarnessConfig(name)
	if !ok {
		return notify.HarnessInfo{}, false
	}
	return notify.HarnessInfo{Project: h.Project, Scheduled: h.Schedule != ""}, true
}

// Cause is why run started, from the run history.
func (s notifySource) Cause(name string, run uint64) api.Cause {
	c := s.ctl
	if run == 0 {
		return ""
	}
	rs, err := c.Runs(context.Background(), api.RunsArgs{Name: name, Limit: 8})
	if err != nil {
		return ""
	}
	for _, r := range rs {
		if r.ID == run {
			return r.Cause
		}
	}
	return ""
}

// Tail is the run's last output lines, from the activity log.
func (s notifySource) Tail(name string, run uint64, n int) []string {
	c := s.ctl
	res, err := c.Logs(context.Background(), api.LogsArgs{Name: name, Lines: 4 * n})
	if err != nil {
		return nil
	}
	sum, ok := res.(api.LogsSummary)
	if !ok {
		return nil
	}
	var out []string
	for _, e := range sum.Entries {
		if e.Kind == "output" && (run == 0 || e.RunID == run) {
			out = append(out, e.Text)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

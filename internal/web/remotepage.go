package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
)

// A remote row's page (docs/design/web.md, "Every machine in one page"):
// GET /host/HOST/h/NAME shows what a local row's page shows that can be
// read through the host's key: the row as last heard (its state, its
// prompt and the actions both grants allow), its screen as text (the
// screen op: the host masks it, as for any reader without input), its
// agent's turns and its changes (read-only: a review is sent from the
// host's own page). Each is one Remotes.Call, the three at once, each
// bounded by the host's call timeout and answered at once for a host
// that is not connected; a refusal (the host's key, the host's daemon)
// is shown in the section as the host said it. The page is read when it
// is opened, not kept live: a host's screen is an SSH round trip, too
// dear to read again at every event of every host.

// remoteHarnessView is a remote row's page.
type remoteHarnessView struct {
	Host hostSection // the host, with only this row when its list has it
	Name string
	// Unit is the row as last heard; nil when the host's list lacks it.
	Unit *unitView
	// Screen is the screen's text, or ScreenErr why there is none.
	Screen    *api.Screen
	ScreenErr string
	// Turns is the agent's conversation; nil for a row without an agent.
	Turns    *api.TurnsResult
	TurnsErr string
	// Changes is the diff; None when the harness has no git checkout.
	Changes *changesView
}

// ScreenText is the screen's lines, the blank ones at its end left out.
func (v remoteHarnessView) ScreenText() string {
	if v.Screen == nil {
		return ""
	}
	lines := v.Screen.Lines
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

// HasTurns reports whether the row's agent keeps a transcript; a row the
// host's list lacks is asked anyway (its refusal says why).
func (v remoteHarnessView) HasTurns() bool {
	return v.Unit == nil || v.Unit.Agent != "" && v.Unit.Agent != "generic"
}

// Self is the page's own path, for its refresh link.
func (v remoteHarnessView) Self() string { return hostPage(v.Host.Name, v.Name) }

// remoteHarnessPath splits /host/HOST/h/NAME, each part one escaped
// segment.
func remoteHarnessPath(path string) (host, name string, ok bool) {
	rest, ok := strings.CutPrefix(path, "/host/")
	if !ok {
		return "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[1] != "h" {
		return "", "", false
	}
	host, err1 := url.PathUnescape(parts[0])
	name, err2 := url.PathUnescape(parts[2])
	if err1 != nil || err2 != nil || host == "" || name == "" {
		return "", "", false
	}
	return host, name, true
}

// serveRemoteHarness is GET /host/HOST/h/NAME.
func (s *Server) serveRemoteHarness(w http.ResponseWriter, r *http.Request, rq *request) {
	host, name, ok := remoteHarnessPath(r.URL.EscapedPath())
	if !ok || s.opt.Remotes == nil {
		s.fail(w, r, http.StatusNotFound, "no such page")
		return
	}
	if !rq.may(api.Read) {
		s.fail(w, r, http.StatusForbidden, "this token's grant does not include read")
		return
	}
	var fleet *RemoteFleet
	for _, f := range s.opt.Remotes.Fleets() {
		if f.Name == host {
			fleet = &f
			break
		}
	}
	if fleet == nil {
		s.fail(w, r, http.StatusNotFound, "no host "+errcode.Quote(host)+" in the config's [host.NAME] tables")
		return
	}
	v := remoteHarnessView{Host: s.hostSection(rq, *fleet, ""), Name: name}
	var rows []unitView
	for _, u := range v.Host.Units {
		if u.Name == name {
			v.Unit = &u
			rows = append(rows, u)
		}
	}
	v.Host.Units = rows
	s.readRemoteHarness(r.Context(), rq, &v)
	s.render(w, r, http.StatusOK, "remote.html", s.newPage(rq, name+" on "+host, v))
}

// readRemoteHarness fills v's screen, turns and changes from its host,
// the calls at once.
func (s *Server) readRemoteHarness(ctx context.Context, rq *request, v *remoteHarnessView) {
	call := func(op string, args, result any) string {
		err := s.opt.Remotes.Call(ctx, s.callerOf(rq), v.Host.Name, op, args, result)
		if err == nil {
			return ""
		}
		s.log.Info("a remote row's page: the host refused", logkey.Host, v.Host.Name, logkey.Op, op, logkey.Harness, v.Name, logkey.Err, err)
		return errcode.Message(err)
	}
	// Whether to read turns is decided before the calls run: they write
	// v's fields.
	turns := v.HasTurns()
	var wg sync.WaitGroup
	wg.Go(func() {
		var sc api.Screen
		if v.ScreenErr = call(api.OpScreen, api.ScreenArgs{Name: v.Name}, &sc); v.ScreenErr == "" {
			v.Screen = &sc
		}
	})
	if turns {
		wg.Go(func() {
			var t api.TurnsResult
			if v.TurnsErr = call(api.OpTurns, api.TurnsArgs{Name: v.Name, Limit: turnsOnPage}, &t); v.TurnsErr == "" {
				v.Turns = &t
			}
		})
	}
	wg.Go(func() {
		var d api.Diff
		err := s.opt.Remotes.Call(ctx, s.callerOf(rq), v.Host.Name, api.OpDiff, api.DiffArgs{Name: v.Name}, &d)
		if v.Changes = changesOf(v.Name, d, err); v.Changes.Err != "" {
			s.log.Info("a remote row's page: the host refused", logkey.Host, v.Host.Name, logkey.Op, api.OpDiff, logkey.Harness, v.Name, logkey.Err, err)
		}
	})
	wg.Wait()
}

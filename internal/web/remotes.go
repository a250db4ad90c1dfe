package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logkey"
)

// Every machine in one page (docs/design/web.md): the fleets of the
// [host.NAME] tables, each in a section of its own under the local one,
// read from what the daemon last heard from each host (Remotes never
// waits on a host), acted on with POST /host/HOST/h/NAME/ACTION, which
// goes to that host through its SSH key. What a row offers is what both
// the session's grant and the host's key allow; the rest is shown
// disabled, and a refusal from the host anyway is shown as it said it.

// Remotes are the other machines' fleets the page shows.
type Remotes interface {
	// Fleets are every host's last view, at once.
	Fleets() []RemoteFleet
	// Call runs op on host's daemon (bounded) for caller (the page's
	// session, for this daemon's audit log), decoding into result.
	Call(ctx context.Context, caller api.Caller, host, op string, args, result any) error
}

// RemoteFleet is one host's fleet as last heard.
type RemoteFleet struct {
	Name, Addr string
	// Units is the host's last list answer (nil before the first).
	Units json.RawMessage
	// Read is when Units was read.
	Read time.Time
	// Bridged says the host's key allows Grant only.
	Bridged bool
	Grant   []string
	// Err says why the host is not live now ("" when it is).
	Err string
}

// hostSection is a host's part of the fleet page.
type hostSection struct {
	Name, Addr string
	Err        string
	// Age is how old the rows are when the host is not live ("" when it is).
	Age     string
	Units   []unitView
	Count   int
	Waiting int
	// May is what its rows may do: the session's grant and the key's.
	May map[string]bool
	// KeyGrant is the key's grant, for the disabled buttons' titles.
	KeyGrant string
}

// hostPath is the path of an action on a remote row.
func hostPath(host, name, action string) string {
	return hostPage(host, name) + "/" + action
}

// hostPage is the path of a remote row's page (remotepage.go).
func hostPage(host, name string) string {
	return "/host/" + url.PathEscape(host) + "/h/" + url.PathEscape(name)
}

// remoteSections are the hosts' sections, filtered like the local rows.
func (s *Server) remoteSections(rq *request, filter string) []hostSection {
	if s.opt.Remotes == nil {
		return nil
	}
	var out []hostSection
	for _, f := range s.opt.Remotes.Fleets() {
		out = append(out, s.hostSection(rq, f, filter))
	}
	return out
}

// hostSection is f's section: its rows matching filter, and what they
// may do for rq.
func (s *Server) hostSection(rq *request, f RemoteFleet, filter string) hostSection {
	sec := hostSection{Name: f.Name, Addr: f.Addr, Err: f.Err, May: map[string]bool{}}
	key := api.Grant{}
	keyOK := true
	if f.Bridged {
		g, err := api.ParseGrant(f.Grant)
		key, keyOK = g, err == nil
		sec.KeyGrant = strings.Join(f.Grant, ",")
		if sec.KeyGrant == "" {
			sec.KeyGrant = "nothing"
		}
	}
	for _, c := range []api.Class{api.Read, api.Write, api.Input} {
		sec.May[string(c)] = rq.may(c) && (!f.Bridged || (keyOK && key.Allows(api.FacadeNamespace, c)))
	}
	if f.Err != "" && !f.Read.IsZero() {
		sec.Age = roughDuration(s.now().Sub(f.Read))
	}
	var units []unitView
	if len(f.Units) > 0 && json.Unmarshal(f.Units, &units) != nil {
		sec.Err = "the host's list could not be read"
	}
	for _, u := range units {
		if filter != "" && !matches(u, filter) && !strings.Contains(strings.ToLower(f.Name), strings.ToLower(filter)) {
			continue
		}
		sec.Units = append(sec.Units, u)
		sec.Count++
		if u.Waiting() {
			sec.Waiting++
		}
	}
	slices.SortStableFunc(sec.Units, func(a, b unitView) int {
		if a.Waiting() != b.Waiting() {
			if a.Waiting() {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return sec
}

// remoteWaiting is how many of the hosts' agents wait, as last heard.
func (s *Server) remoteWaiting() int {
	if s.opt.Remotes == nil {
		return 0
	}
	n := 0
	for _, f := range s.opt.Remotes.Fleets() {
		var units []unitView
		if json.Unmarshal(f.Units, &units) != nil {
			continue
		}
		for _, u := range units {
			if u.Waiting() {
				n++
			}
		}
	}
	return n
}

// RemoteChanged tells the open pages that host's fleet changed: they
// fetch their live part again, as for a local event.
func (s *Server) RemoteChanged(host string) {
	s.hub.publish(api.Event{Kind: hostEvent, Unit: "host:" + host, Time: s.now()})
}

// hostEvent is the kind of the event stream's "a host's fleet changed"
// (the script fetches the fleet and the waiting count again).
const hostEvent = "host"

// remoteActions are what a remote row may do: the page's own actions
// but the ones that need a page of the harness (send, review).
var remoteActions = map[string]bool{"start": true, "stop": true, "restart": true, "trigger": true, "answer": true}

// serveRemoteAction is POST /host/HOST/h/NAME/ACTION (CSRF checked): the
// session's grant is checked here, the key's by the host's bridge, whose
// refusal comes back as it said it.
func (s *Server) serveRemoteAction(w http.ResponseWriter, r *http.Request, rq *request) {
	host, name, action, ok := remotePath(r.URL.EscapedPath())
	if !ok || s.opt.Remotes == nil || !remoteActions[action] {
		s.fail(w, r, http.StatusNotFound, "no such action")
		return
	}
	a := actions[action]
	if c, ok := api.ClassOf(a.op); ok {
		a.class = c
	}
	if !rq.may(a.class) {
		s.fail(w, r, http.StatusForbidden, fmt.Sprintf("not_permitted: %s needs the %s class; this token's grant is %s", action, a.class, rq.grant))
		return
	}
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, "malformed form")
		return
	}
	var args any = api.NameArg{Name: name}
	if action == "answer" {
		c := r.PostForm.Get("choice")
		if c == "" {
			s.fail(w, r, http.StatusBadRequest, "answer: the form field choice is missing")
			return
		}
		args = map[string]string{"name": name, "choice": c}
	}
	var res json.RawMessage
	if err := s.opt.Remotes.Call(r.Context(), s.callerOf(rq), host, a.op, args, &res); err != nil {
		s.log.Info("dashboard action on a host failed", logkey.Host, host, logkey.Op, a.op, logkey.Harness, name, logkey.Err, err)
		s.failOp(w, r, err)
		return
	}
	s.log.Info("dashboard action on a host", logkey.Host, host, logkey.Op, a.op, logkey.Harness, name, logkey.Session, rq.sess.who())
	if r.Header.Get(csrfHeader) != "" {
		w.Header().Set("Content-Type", "application/json")
		if len(res) == 0 {
			res = json.RawMessage("null")
		}
		_, _ = fmt.Fprintf(w, `{"ok":true,"result":%s}`, res)
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// remotePath splits /host/HOST/h/NAME/ACTION, each part one escaped
// segment.
func remotePath(path string) (host, name, action string, ok bool) {
	rest, ok := strings.CutPrefix(path, "/host/")
	if !ok {
		return "", "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || parts[1] != "h" {
		return "", "", "", false
	}
	host, err1 := url.PathUnescape(parts[0])
	name, err2 := url.PathUnescape(parts[2])
	if err1 != nil || err2 != nil || host == "" || name == "" || parts[3] == "" {
		return "", "", "", false
	}
	return host, name, parts[3], true
}

package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logkey"
)

// actions are the POST /h/NAME/ACTION routes: the op each calls and the
// class the session's grant must cover (api.ClassOf, the class an MCP
// session needs for the same op; the one here for an op the daemon does
// not know yet), checked before the op runs.
var actions = map[string]struct {
	op    string
	class api.Class
}{
	"start":   {api.OpStart, api.Write},
	"stop":    {api.OpStop, api.Write},
	"restart": {api.OpRestart, api.Write},
	"trigger": {api.OpTrigger, api.Write},
	"send":    {api.OpSend, api.Input},
	"answer":  {api.OpAnswer, api.Input},
	"review":  {api.OpReview, api.Input},
}

// serveAction runs one action (CSRF already checked). A browser's form
// gets a redirect back to the page; the script's fetch (which sets the
// CSRF header) gets JSON.
func (s *Server) serveAction(w http.ResponseWriter, r *http.Request, rq *request, name, action string) {
	a, ok := actions[action]
	if !ok {
		s.fail(w, r, http.StatusNotFound, fmt.Sprintf("no action %q (start, stop, restart, trigger, send, answer, review)", action))
		return
	}
	if c, ok := api.ClassOf(a.op); ok {
		a.class = c
	}
	if !rq.may(a.class) {
		s.log.Warn("dashboard action refused by grant", logkey.Op, a.op, logkey.Harness, name, logkey.Session, rq.sess.who())
		s.fail(w, r, http.StatusForbidden, fmt.Sprintf("not_permitted: %s needs the %s class; this token's grant is %s", action, a.class, rq.grant))
		return
	}
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, "malformed form")
		return
	}
	f := r.PostForm
	var args any
	switch action {
	case "send":
		args = api.SendArgs{Name: name, Text: f.Get("text"), Keys: f["key"], Enter: f.Get("enter") != ""}
	case "answer":
		c := f.Get("choice")
		if c == "" {
			s.fail(w, r, http.StatusBadRequest, "answer: the form field choice is missing")
			return
		}
		args = map[string]string{"name": name, "choice": c}
	case "review":
		args = api.ReviewArgs{Name: name, Comments: reviewComments(f["comment"], f.Get("comments"))}
	default:
		args = api.NameArg{Name: name}
	}
	var res json.RawMessage
	if err := s.callAs(r.Context(), rq, a.op, args, &res); err != nil {
		s.log.Info("dashboard action failed", logkey.Op, a.op, logkey.Harness, name, logkey.Err, err)
		s.failOp(w, r, err)
		return
	}
	s.log.Info("dashboard action", logkey.Op, a.op, logkey.Harness, name, logkey.Session, rq.sess.who())
	if r.Header.Get(csrfHeader) != "" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"ok":true,"result":%s}`, res)
		return
	}
	back := f.Get("back")
	if !strings.HasPrefix(back, "/") || strings.HasPrefix(back, "//") || strings.Contains(back, "\\") {
		back = hpath(name)
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

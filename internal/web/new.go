package web

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
)

// newPath is the "New agent" form (docs/web.md): GET shows it, POST makes
// the harness with the new op, as `harness new` does. Both need write.
const newPath = "/new"

// newView is the form: the agents to pick from, what was typed (kept
// when the op refuses it) and the refusal's text.
type newView struct {
	Agents []api.AgentProgram
	Form   api.NewArgs
	Error  string
}

// serveNew answers GET and POST /new.
func (s *Server) serveNew(w http.ResponseWriter, r *http.Request, rq *request) {
	if !rq.may(api.Write) {
		s.fail(w, r, http.StatusForbidden, fmt.Sprintf("not_permitted: a new agent needs the write class; this token's grant is %s", rq.grant))
		return
	}
	v := newView{}
	status := http.StatusOK
	if r.Method == http.MethodPost {
		if err := r.ParseForm(); err != nil {
			s.fail(w, r, http.StatusBadRequest, "malformed form")
			return
		}
		f := r.PostForm
		v.Form = api.NewArgs{
			Name: strings.TrimSpace(f.Get("name")), Agent: f.Get("agent"), Prompt: f.Get("prompt"),
			Repo: strings.TrimSpace(f.Get("repo")), Worktree: f.Get("worktree") != "", Base: strings.TrimSpace(f.Get("base")),
		}
		var res api.NewResult
		err := s.callAs(r.Context(), rq, api.OpNew, v.Form, &res)
		if err == nil {
			s.log.Info("dashboard made a harness", logkey.Harness, res.Name, logkey.Session, rq.sess.who())
			http.Redirect(w, r, hpath(res.Name), http.StatusSeeOther)
			return
		}
		s.log.Info("dashboard new refused", logkey.Harness, v.Form.Name, logkey.Err, err)
		v.Error = fmt.Sprintf("%s: %s", errcode.Of(err), errcode.Message(err))
		status = http.StatusBadRequest
	}
	if err := s.call(r.Context(), api.OpAgents, api.AgentsArgs{}, &v.Agents); err != nil {
		s.failOp(w, r, err)
		return
	}
	s.render(w, r, status, "new.html", s.newPage(rq, "New agent", v))
}

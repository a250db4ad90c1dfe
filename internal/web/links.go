package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/actionlink"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
)

// Action links (/a/ID): the links a waiting notification carries, one per
// choice (internal/actionlink). The link is the permission, so no
// sign-in is asked: a GET shows what the link would do and a button, and
// changes nothing (link previewers fetch what a message holds); a POST
// answers the prompt it was made for, once, through the answer op bound
// to that prompt's id. A link whose prompt is gone, used or expired is
// 410, saying what the agent does now.

// linkView is the page of an action link.
type linkView struct {
	Link actionlink.Link
	// Path is the link's own path (the form posts to it).
	Path string
	// Usable: the button is shown; Done: the link was just used.
	Usable, Done bool
	// Gone says why the link no longer answers ("" when it does).
	Gone string
	// Now is what the harness and its agent are doing now.
	Now string
	// Expires is the link's expiry, as a person reads it.
	Expires string
}

// serveLink routes /a/ID.
func (s *Server) serveLink(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Robots-Tag", "noindex, nofollow")
	id := strings.TrimPrefix(r.URL.Path, "/a/")
	if s.opt.Links == nil || id == "" || strings.Contains(id, "/") {
		s.fail(w, r, http.StatusNotFound, "no such link")
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		s.showLink(w, r, id)
	case http.MethodPost:
		s.useLink(w, r, id)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		s.fail(w, r, http.StatusMethodNotAllowed, "an action link is opened with GET and used with POST")
	}
}

// unknownLink answers a link the daemon does not hold.
func (s *Server) unknownLink(w http.ResponseWriter, r *http.Request) {
	s.fail(w, r, http.StatusNotFound, "This link is not known: it may be cut short, or the daemon restarted since it was sent "+
		"(action links do not survive a restart). Answer from the dashboard instead.")
}

// showLink is GET /a/ID: what the link would do, and its button. It
// changes nothing.
func (s *Server) showLink(w http.ResponseWriter, r *http.Request, id string) {
	l, err := s.opt.Links.Look(id)
	if errors.Is(err, actionlink.ErrUnknown) {
		s.unknownLink(w, r)
		return
	}
	v := linkView{Link: l, Path: "/a/" + id, Expires: l.Expires.Local().Format("15:04 MST")}
	now, onIt := s.agentNow(r.Context(), l)
	v.Now = now
	switch {
	case err != nil:
		v.Gone = goneReason(err)
	case !onIt:
		v.Gone = "The agent is no longer on this prompt."
	default:
		v.Usable = true
		s.render(w, r, http.StatusOK, "link.html", v)
		return
	}
	s.render(w, r, http.StatusGone, "link.html", v)
}

// useLink is POST /a/ID: the answer, once.
func (s *Server) useLink(w http.ResponseWriter, r *http.Request, id string) {
	l, err := s.opt.Links.Claim(id)
	if errors.Is(err, actionlink.ErrUnknown) {
		s.unknownLink(w, r)
		return
	}
	v := linkView{Link: l, Path: "/a/" + id, Expires: l.Expires.Local().Format("15:04 MST")}
	if err != nil {
		v.Gone = goneReason(err)
		v.Now, _ = s.agentNow(r.Context(), l)
		s.render(w, r, http.StatusGone, "link.html", v)
		return
	}
	// A phone that drops the connection must not cut an answer half-typed.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 30*time.Second)
	defer cancel()
	var res api.AnswerResult
	// The audit log names the door; the link itself is the permission and
	// is never written down.
	linkCaller := caller
	linkCaller.Door, linkCaller.Actor = api.DoorLink, "link"
	err = s.callFor(ctx, linkCaller, api.OpAnswer, api.AnswerArgs{Name: l.Harness, Choice: strconv.Itoa(l.Number), PromptID: l.PromptID}, &res)
	switch code := errcode.Of(err); {
	case err == nil:
		s.log.Info("action link used", logkey.Harness, l.Harness, logkey.Run, l.RunID, logkey.Remote, r.RemoteAddr)
		v.Done = true
		v.Now = describeNow(l.Harness, "running", res.After)
		s.render(w, r, http.StatusOK, "link.html", v)
	case code == errcode.NotWaiting || code == errcode.NotRunning || code == errcode.UnknownHarness:
		// The prompt is gone: so is the link (it was claimed).
		v.Gone = "The agent is no longer on this prompt."
		v.Now, _ = s.agentNow(r.Context(), l)
		s.render(w, r, http.StatusGone, "link.html", v)
	default:
		// Nothing was typed (the dialog not ready, the daemon busy): the
		// link may be tried again.
		s.opt.Links.Release(id)
		s.log.Info("action link not used", logkey.Harness, l.Harness, logkey.Err, err)
		s.fail(w, r, http.StatusServiceUnavailable, fmt.Sprintf("Not answered (%s): try the link again in a moment.", code))
	}
}

// goneReason says why a link no longer answers.
func goneReason(err error) string {
	switch {
	case errors.Is(err, actionlink.ErrUsed):
		return "This prompt was answered through one of its links already."
	case errors.Is(err, actionlink.ErrExpired):
		return "This link has expired."
	}
	return "This link no longer answers."
}

// agentNow says what l's harness and its agent are doing now, and
// whether the agent is still on l's prompt.
func (s *Server) agentNow(ctx context.Context, l actionlink.Link) (string, bool) {
	var u struct {
		api.UnitInfo
		CurrentRun *api.Run `json:"current_run"`
	}
	if err := s.call(ctx, api.OpDescribe, api.NameArg{Name: l.Harness}, &u); err != nil {
		return l.Harness + ": " + string(errcode.Of(err)), false
	}
	var run uint64
	if u.CurrentRun != nil {
		run = u.CurrentRun.ID
	}
	onIt := u.AgentState == api.AgentWaiting && u.PromptID == l.PromptID && run == l.RunID
	return describeNow(l.Harness, u.State, u.AgentView), onIt
}

// describeNow is one line on a harness's state and its agent's.
func describeNow(name, state string, a api.AgentView) string {
	out := name + " is " + state
	if a.AgentState == "" {
		return out + "."
	}
	agent := "its agent"
	if a.Agent != "" {
		agent += " (" + a.Agent + ")"
	}
	out += "; " + agent + " is " + string(a.AgentState)
	if a.AgentState == api.AgentWaiting && a.Prompt != "" {
		out += " on: " + a.Prompt
		if strings.ContainsAny(a.Prompt[len(a.Prompt)-1:], ".?!:") {
			return out
		}
	}
	return out + "."
}

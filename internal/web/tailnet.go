package web

import (
	"context"
	"net/http"
	"strings"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logkey"
)

// Visitors on the tailnet (docs/design/web.md): the tailnet node names
// each request's login (WhoIs) and hands the request on with it
// (WithTailnetLogin). That login is the visitor's identity there, in
// place of a token or a paired device: its grant is [web.users]'s, read
// at every request, so a reload that removes a login shuts it out at its
// next request, and its open streams within a second (recheck.go). A login without a grant is refused everything but the
// action links (the link alone is the permission) and the static assets.

type tailnetKey struct{}

// WithTailnetLogin returns r as the tailnet node hands it on: sent by
// login, as the tailnet says.
func WithTailnetLogin(r *http.Request, login string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), tailnetKey{}, login))
}

// tailnetLogin is the login the tailnet named for r; false for a request
// that did not come through the tailnet node.
func tailnetLogin(r *http.Request) (string, bool) {
	login, ok := r.Context().Value(tailnetKey{}).(string)
	return login, ok && login != ""
}

// tailnetGrant is login's grant; false for a login [web.users] lacks.
func (s *Server) tailnetGrant(login string) (api.Grant, bool) {
	if s.opt.TailnetUsers == nil {
		return api.Grant{}, false
	}
	return s.opt.TailnetUsers(login)
}

// refuseUnknownLogin answers 403 to a tailnet login without a grant, for
// every path but an action link's and the assets'. It names only the
// visitor's own login, never whom the page does let in.
func (s *Server) refuseUnknownLogin(w http.ResponseWriter, r *http.Request) bool {
	login, on := tailnetLogin(r)
	if !on || strings.HasPrefix(r.URL.Path, "/a/") || strings.HasPrefix(r.URL.Path, "/assets/") {
		return false
	}
	if _, known := s.tailnetGrant(login); known {
		return false
	}
	s.log.Warn("tailnet login without a grant refused", logkey.Session, "tailnet "+login, logkey.Remote, r.RemoteAddr)
	s.fail(w, r, http.StatusForbidden, "the tailnet login "+login+" has no grant here: the operator of this harness gives one under [web.users]")
	return true
}

// tailnetSession is the session of a tailnet request: its own login's
// session when the cookie names one, else a new one for the login (a
// token's or a device's session does not carry over to the tailnet).
func (s *Server) tailnetSession(w http.ResponseWriter, r *http.Request, login string, sess *session, grant api.Grant, ok bool) (*session, api.Grant, bool) {
	if ok && sess.tailnet == login {
		return sess, grant, true
	}
	g, known := s.tailnetGrant(login)
	if !known {
		return nil, api.Grant{}, false
	}
	sess, err := s.openSession(&session{tailnet: login})
	if err != nil {
		s.log.Warn("tailnet session refused", logkey.Session, "tailnet "+login, logkey.Err, err)
		return nil, api.Grant{}, false
	}
	setSessionCookie(w, r, sess)
	s.log.Info("tailnet user signed in", logkey.Session, sess.who(), logkey.Remote, r.RemoteAddr)
	return sess, g, true
}

// liveTailnetSession is the grant in force of a tailnet session: only on
// a request the tailnet names the same login for, while that login has a
// grant.
func (s *Server) liveTailnetSession(r *http.Request, sess *session) (api.Grant, bool) {
	login, on := tailnetLogin(r)
	if !on || login != sess.tailnet {
		return api.Grant{}, false
	}
	return s.tailnetGrant(login)
}

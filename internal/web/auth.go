package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
)

// cookieName is the session cookie: HttpOnly, SameSite=Strict, path /.
const cookieName = "harness_session"

// csrfField is the form field (and csrfHeader the header the script sets)
// that carries a session's CSRF token on every state-changing request.
const (
	csrfField  = "csrf"
	csrfHeader = "X-CSRF-Token"
)

// session is one sign-in. The cookie holds only its random id.
type session struct {
	id       string
	csrf     string
	operator bool   // signed in with the operator token
	tokenID  string // else the dashboard token's id
	device   string // else the paired device's name
	tailnet  string // else the tailnet login (tailnet.go)
	// revoked is closed when the device is revoked; nil (never ready) for
	// a token's session.
	revoked <-chan struct{}
	expires time.Time
	used    time.Time // its latest request; guarded by Server.mu
	streams int       // its open event streams and terminals; guarded by Server.mu
}

// credential names the token a session signed in with: the sessions of
// one credential are bounded together and never make another's give way.
func (s *session) credential() string {
	if s.operator {
		return "token:operator"
	}
	if s.device != "" {
		return "device:" + s.device
	}
	if s.tailnet != "" {
		return "tailnet:" + s.tailnet
	}
	return "token:" + s.tokenID
}

// who names the session's credential in logs, never the token itself.
func (s *session) who() string {
	if s.operator {
		return "operator"
	}
	if s.device != "" {
		return "device " + s.device
	}
	if s.tailnet != "" {
		return "tailnet " + s.tailnet
	}
	return "dashboard token " + s.tokenID
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// session finds the request's session and the grant in force: the live
// operator grant, or the dashboard token's grant while the token is in the
// store. An expired session, or one whose token was revoked, is ended.
func (s *Server) session(r *http.Request) (*session, api.Grant, bool) {
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" {
		return nil, api.Grant{}, false
	}
	s.mu.Lock()
	sess := s.sessions[c.Value]
	if sess != nil && !s.now().Before(sess.expires) {
		delete(s.sessions, sess.id)
		s.log.Info("dashboard session expired", logkey.Session, sess.who())
		sess = nil
	}
	if sess != nil {
		sess.used = s.now()
	}
	s.mu.Unlock()
	if sess == nil {
		return nil, api.Grant{}, false
	}
	g, ok := s.grantInForce(r, sess)
	if !ok {
		return nil, api.Grant{}, false
	}
	return sess, g, true
}

// grantInForce is the grant sess has now, r being one of its requests:
// the operator's live grant, or its credential's (a tailnet login's, a
// device's, a dashboard token's) while the credential stands; a session
// whose credential is gone is ended.
func (s *Server) grantInForce(r *http.Request, sess *session) (api.Grant, bool) {
	if sess.operator {
		return s.b.OperatorGrant(), true
	}
	if sess.tailnet != "" {
		g, ok := s.liveTailnetSession(r, sess)
		if !ok {
			s.endSession(sess)
			s.log.Info("tailnet session ended: another login, or no grant now", logkey.Session, sess.who())
			return api.Grant{}, false
		}
		return g, true
	}
	if sess.device != "" {
		g, ok := s.opt.Devices.Live(sess.device, remoteHost(r))
		if !ok {
			s.endSession(sess)
			s.log.Info("device revoked; its session ended", logkey.Session, sess.who())
			return api.Grant{}, false
		}
		return g, true
	}
	t, ok := s.tokens.Live(sess.tokenID)
	if !ok {
		s.endSession(sess)
		s.log.Info("dashboard token revoked; its session ended", logkey.Session, sess.who())
		return api.Grant{}, false
	}
	g, err := api.ParseGrant(t.Grant)
	if err != nil {
		return api.Grant{}, false
	}
	return g, true
}

// liveSession is the grant in force of sess, an open stream's session
// (its request may carry no cookie: the session may have been opened by
// that very request): false once sess was signed out, expired or ended,
// or its credential is gone.
func (s *Server) liveSession(r *http.Request, sess *session) (api.Grant, bool) {
	if !s.signedIn(sess) {
		return api.Grant{}, false
	}
	return s.grantInForce(r, sess)
}

// signedIn reports whether sess is still a session: not signed out,
// expired or ended.
func (s *Server) signedIn(sess *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[sess.id] == sess && s.now().Before(sess.expires)
}

func (s *Server) endSession(sess *session) {
	s.mu.Lock()
	delete(s.sessions, sess.id)
	s.mu.Unlock()
}

// checkCSRF compares the request's CSRF token (header or form field) with
// the session's in constant time.
func (s *Server) checkCSRF(r *http.Request, sess *session) bool {
	got := r.Header.Get(csrfHeader)
	if got == "" {
		r.Body = http.MaxBytesReader(nil, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			return false
		}
		got = r.PostForm.Get(csrfField)
	}
	a := sha256.Sum256([]byte(got))
	b := sha256.Sum256([]byte(sess.csrf))
	return got != "" && subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// maxNext bounds the destination a sign-in returns to.
const maxNext = 2048

// localNext reports whether next may be where a sign-in sends the browser:
// a path on this dashboard as a request line carries it (printable ASCII,
// so nothing a browser strips or reads as a slash), never another site
// ("//host", a scheme, a backslash), the sign-in pages, or the fleet
// itself, which is where a sign-in goes anyway.
func localNext(next string) bool {
	if len(next) < 2 || len(next) > maxNext || next[0] != '/' || next[1] == '/' {
		return false
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c <= ' ' || c >= 0x7f || c == '\\' || c == '#' {
			return false
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || u.User != nil {
		return false
	}
	return u.Path != "/login" && u.Path != "/logout"
}

// loginPath is the sign-in page for a signed-out request, keeping where
// it was going.
func loginPath(r *http.Request) string {
	if next := r.URL.RequestURI(); localNext(next) {
		return "/login?next=" + url.QueryEscape(next)
	}
	return "/login"
}

// formNext is the sign-in form's destination, when it is a local one.
func formNext(next string) string {
	if localNext(next) {
		return next
	}
	return ""
}

// serveLogin shows the form (GET) or signs in (POST, fields token and
// next, the page to return to).
func (s *Server) serveLogin(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		s.render(w, r, http.StatusOK, "login.html", loginView{Next: formNext(r.URL.Query().Get("next"))})
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			s.fail(w, r, http.StatusBadRequest, "malformed sign-in form")
			return
		}
		if len(r.URL.Query()) > 0 {
			// A token in the URL would sit in history and logs: refuse it.
			s.fail(w, r, http.StatusBadRequest, "send the token in the form body, not in the URL")
			return
		}
		tok := strings.TrimSpace(r.PostForm.Get("token"))
		next := formNext(r.PostForm.Get("next"))
		sess, err := s.signIn(tok)
		if err != nil {
			s.log.Warn("dashboard sign-in refused", logkey.Remote, r.RemoteAddr, logkey.Err, err)
			s.render(w, r, http.StatusTooManyRequests, "login.html", loginView{Error: "Too many dashboard sessions are signed in; sign out elsewhere or wait for one to expire.", Next: next})
			return
		}
		if sess == nil {
			s.log.Info("dashboard sign-in refused", logkey.Remote, r.RemoteAddr)
			s.render(w, r, http.StatusUnauthorized, "login.html", loginView{Error: "That token is not valid (or was revoked).", Next: next})
			return
		}
		setSessionCookie(w, r, sess)
		s.log.Info("dashboard sign-in", logkey.Session, sess.who(), logkey.Remote, r.RemoteAddr)
		if next == "" {
			next = "/"
		}
		http.Redirect(w, r, next, http.StatusSeeOther)
	default:
		s.fail(w, r, http.StatusMethodNotAllowed, "method not allowed")
	}
}

// errTooManySessions refuses a sign-in when every place is taken by live
// sessions of other credentials, none of which may be pushed out.
var errTooManySessions = errcode.Errorf(errcode.Busy, "too many dashboard sessions are signed in: sign out elsewhere, or wait for sessions to expire")

// signIn checks a presented token and opens a session for it: nil and no
// error for a wrong token. A credential holds at most
// maxSessionsPerCredential sessions, its least recently used giving way to
// a new one; a sign-in never ends another credential's session, so a
// read-only token signed in again and again cannot push the operator out.
func (s *Server) signIn(tok string) (*session, error) {
	if tok == "" {
		return nil, nil
	}
	now := s.now()
	sess := &session{id: randomHex(32), csrf: randomHex(32), expires: now.Add(s.opt.SessionTTL), used: now}
	a := sha256.Sum256([]byte(tok))
	b := sha256.Sum256([]byte(s.opt.OperatorToken))
	switch t, ok := s.tokens.Check(tok); {
	case s.opt.OperatorToken != "" && subtle.ConstantTimeCompare(a[:], b[:]) == 1:
		sess.operator = true
	case ok:
		sess.tokenID = t.ID
	default:
		return nil, nil
	}
	return s.openSession(sess)
}

// openSession records sess (its id, CSRF token and times filled in when
// empty) within the bounds of its credential and of all sessions.
func (s *Server) openSession(sess *session) (*session, error) {
	now := s.now()
	if sess.id == "" {
		sess.id, sess.csrf, sess.expires, sess.used = randomHex(32), randomHex(32), now.Add(s.opt.SessionTTL), now
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var lru *session
	own := 0
	for id, old := range s.sessions {
		if !now.Before(old.expires) {
			delete(s.sessions, id)
			continue
		}
		if old.credential() == sess.credential() {
			own++
			if lru == nil || old.used.Before(lru.used) {
				lru = old
			}
		}
	}
	if own >= maxSessionsPerCredential {
		delete(s.sessions, lru.id)
		s.log.Info("dashboard session ended: its credential signed in again past the limit", logkey.Session, lru.who(), logkey.Count, maxSessionsPerCredential)
	} else if len(s.sessions) >= maxSessions {
		return nil, fmt.Errorf("dashboard sign-in as %s: %w", sess.who(), errTooManySessions)
	}
	s.sessions[sess.id] = sess
	return sess, nil
}

// serveLogout ends the session (POST with its CSRF token).
func (s *Server) serveLogout(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		s.fail(w, r, http.StatusMethodNotAllowed, "sign out with POST")
		return
	}
	sess, _, ok := s.session(r)
	if ok {
		if !s.checkCSRF(r, sess) {
			s.fail(w, r, http.StatusForbidden, "missing or wrong CSRF token: reload the page")
			return
		}
		s.endSession(sess)
		s.log.Info("dashboard sign-out", logkey.Session, sess.who())
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	// A device signing out forgets its cookie too (pair it again to come
	// back); its record stays until `harness devices revoke`.
	http.SetCookie(w, &http.Cookie{Name: deviceCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

package web

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/device"
	"github.com/harness-dev/harness/internal/httpguard"
	"github.com/harness-dev/harness/internal/logkey"
)

// Paired devices (docs/design/web.md): GET /pair?code=C redeems a
// single-use code from `harness pair` and sets the device cookie, which
// holds the device's secret (the store keeps its hash). A request with
// the device cookie and no live session opens a session for the device,
// so CSRF, stream bounds and grant checks are the sessions' own; the
// device's grant is looked up on every request, and its revocation ends
// its streams at once (the Revoked channel).
const (
	deviceCookie = "harness_device"
	// deviceCookieTTL is how long a device stays signed in without being
	// used; every new session of the device renews it.
	deviceCookieTTL = 90 * 24 * time.Hour
)

// PairPath is where a pairing URL points.
const PairPath = "/pair"

// remoteHost is a request's peer address without the port.
func remoteHost(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// setDeviceCookie (re)sets the device cookie for another deviceCookieTTL:
// Secure on TLS, which the listener for people has beyond loopback.
func setDeviceCookie(w http.ResponseWriter, r *http.Request, secret string) {
	http.SetCookie(w, &http.Cookie{
		Name: deviceCookie, Value: secret, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: int(deviceCookieTTL / time.Second),
	})
}

// setSessionCookie sets the session cookie of sess.
func setSessionCookie(w http.ResponseWriter, r *http.Request, sess *session) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: sess.id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, Expires: sess.expires,
	})
}

// servePair redeems a pairing code: a good one signs the device in and
// goes to the fleet; a used, expired or unknown one answers 410 with the
// reason and signs nothing in; a flood of wrong codes answers 429.
func (s *Server) servePair(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		// Not even HEAD: a probe must not use the code up.
		s.fail(w, r, http.StatusMethodNotAllowed, "open the pairing URL with GET")
		return
	}
	if s.opt.Devices == nil {
		s.fail(w, r, http.StatusNotFound, "this listener pairs no devices: pair on the listener of [web] listen")
		return
	}
	secret, d, err := s.opt.Devices.Redeem(r.URL.Query().Get("code"), remoteHost(r))
	switch {
	case errors.Is(err, device.ErrTooMany):
		s.log.Warn("pairing refused: too many wrong codes", logkey.Remote, r.RemoteAddr)
		s.fail(w, r, http.StatusTooManyRequests, err.Error())
		return
	case errors.Is(err, device.ErrCodeUsed), errors.Is(err, device.ErrCodeExpired), errors.Is(err, device.ErrCodeUnknown):
		s.log.Info("pairing refused", logkey.Remote, r.RemoteAddr, logkey.Err, err)
		s.fail(w, r, http.StatusGone, err.Error())
		return
	case err != nil:
		s.log.Error("pairing failed", logkey.Remote, r.RemoteAddr, logkey.Err, err)
		s.fail(w, r, http.StatusServiceUnavailable, "pairing failed: "+err.Error())
		return
	}
	sess, err := s.openSession(&session{device: d.Name, revoked: d.Revoked})
	if err != nil {
		s.fail(w, r, http.StatusTooManyRequests, err.Error())
		return
	}
	setDeviceCookie(w, r, secret)
	setSessionCookie(w, r, sess)
	s.log.Info("device paired", logkey.Session, sess.who(), logkey.Remote, r.RemoteAddr)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// deviceSession opens a session for a request carrying a live device
// cookie (and no live session), renewing both cookies.
func (s *Server) deviceSession(w http.ResponseWriter, r *http.Request) (*session, api.Grant, bool) {
	c, err := r.Cookie(deviceCookie)
	if err != nil || c.Value == "" || s.opt.Devices == nil {
		return nil, api.Grant{}, false
	}
	d, ok := s.opt.Devices.Check(c.Value, remoteHost(r))
	if !ok {
		// Revoked, or from another daemon's store: forget it.
		http.SetCookie(w, &http.Cookie{Name: deviceCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
		return nil, api.Grant{}, false
	}
	sess, err := s.openSession(&session{device: d.Name, revoked: d.Revoked})
	if err != nil {
		s.log.Warn("device session refused", logkey.Session, "device "+d.Name, logkey.Err, err)
		return nil, api.Grant{}, false
	}
	setDeviceCookie(w, r, c.Value)
	setSessionCookie(w, r, sess)
	s.log.Info("device signed in", logkey.Session, sess.who(), logkey.Remote, r.RemoteAddr)
	return sess, d.Grant, true
}

// hostAllowed reports whether r's Host names loopback or one of
// Options.Hosts (the port is not compared, as for loopback).
func (s *Server) hostAllowed(r *http.Request) bool {
	if httpguard.LoopbackRequest(r) {
		return true
	}
	if !strings.HasPrefix(r.RequestURI, "/") {
		return false
	}
	return s.knownHost(r.Host)
}

// originAllowed is hostAllowed for an Origin header.
func (s *Server) originAllowed(origin string) bool {
	if httpguard.LoopbackOrigin(origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Opaque != "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return false
	}
	if sc := strings.ToLower(u.Scheme); sc != "http" && sc != "https" {
		return false
	}
	return s.knownHost(u.Host)
}

func (s *Server) knownHost(hostport string) bool {
	host := hostport
	if h, port, err := net.SplitHostPort(hostport); err == nil {
		if strings.Trim(port, "0123456789") != "" {
			return false
		}
		host = h
	}
	host = strings.Trim(host, "[]")
	hosts := s.opt.Hosts
	if s.opt.TailnetHosts != nil {
		hosts = append(slices.Clip(hosts), s.opt.TailnetHosts()...)
	}
	for _, h := range hosts {
		if h != "" && strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

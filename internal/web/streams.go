package web

import (
	"fmt"
	"net/http"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
)

// Streams (the event stream at /events and each terminal's WebSocket) hold
// a connection of the HTTP listener for as long as a page is open. The
// listener is the MCP door's too, with one bound on its connections
// (httpmcp.LimitListener): without bounds of their own, 300 streams of one
// signed-in browser took every connection, and agents' MCP calls and new
// sign-ins waited in the kernel's backlog. So streams are bounded per
// session, per credential and overall, below the listener's bound, and a
// stream past a bound is refused at once (429 with a message) rather than
// queued.
const (
	// DefaultMaxStreams is the overall bound unless Options.MaxStreams
	// says otherwise.
	DefaultMaxStreams = 64
	// maxStreamsPerSession is more than a person's tabs hold: each page
	// has one event stream and at most one terminal.
	maxStreamsPerSession = 8
)

// errTooManyStreams refuses a stream past a bound.
var errTooManyStreams = errcode.Errorf(errcode.Busy, "too many open dashboard streams")

// streamCount is what the streams hold; guarded by Server.mu.
type streamCount struct {
	total         int
	perCredential map[string]int
}

// perCredential is how many of the overall streams one credential's
// sessions may hold together: half, so one token's pages leave room for
// another's.
func (s *Server) perCredentialStreams() int { return max(1, s.opt.MaxStreams/2) }

// openStream takes a place for a stream of sess, or says which bound
// refused it. The returned release gives the place back; call it once.
func (s *Server) openStream(sess *session) (release func(), err error) {
	cred := sess.credential()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case sess.streams >= maxStreamsPerSession:
		return nil, fmt.Errorf("%w: this session holds %d (close other tabs of this dashboard)", errTooManyStreams, maxStreamsPerSession)
	case s.streams.perCredential[cred] >= s.perCredentialStreams():
		return nil, fmt.Errorf("%w: the sessions of %s hold %d", errTooManyStreams, sess.who(), s.perCredentialStreams())
	case s.streams.total >= s.opt.MaxStreams:
		return nil, fmt.Errorf("%w: the dashboard holds %d", errTooManyStreams, s.opt.MaxStreams)
	}
	sess.streams++
	s.streams.perCredential[cred]++
	s.streams.total++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		sess.streams--
		s.streams.total--
		if s.streams.perCredential[cred]--; s.streams.perCredential[cred] == 0 {
			delete(s.streams.perCredential, cred)
		}
	}, nil
}

// admitStream takes a place for the request's stream, or answers 429 and
// reports false. The stream is listed for the recheck with what it needs
// of its grant (recheck.go): its ended channel closes when the grant no
// longer covers needs. release gives the place back and unlists it.
func (s *Server) admitStream(w http.ResponseWriter, r *http.Request, rq *request, needs ...api.Class) (ls *liveStream, release func(), ok bool) {
	free, err := s.openStream(rq.sess)
	if err != nil {
		s.log.Warn("dashboard stream refused", logkey.Session, rq.sess.who(), logkey.Path, r.URL.Path, logkey.Remote, r.RemoteAddr, logkey.Err, err)
		s.fail(w, r, http.StatusTooManyRequests, err.Error())
		return nil, nil, false
	}
	ls = s.trackStream(rq, r, needs...)
	return ls, func() {
		s.untrackStream(ls)
		free()
	}, true
}

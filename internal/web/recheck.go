package web

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logkey"
)

// An open stream (the event stream, a terminal) was let in by its
// session's grant when it opened; the grant can change under it while it
// stays open: a reload removes a tailnet login from [web.users] or
// narrows its grant, or the operator's, `harness mcp token --revoke` ends
// a dashboard token. Requests see the change at once, since each reads
// the grant again; an open stream has no next request. So every open
// stream is listed here with what it needs of the grant, and the list is
// checked again at every reload (the daemon's reload event) and every
// streamRecheck besides (a token revoked by the CLI is a file the daemon
// does not watch): a stream whose session is gone, or whose grant no
// longer covers what it needs, is ended within that second and the
// daemon's log says why (docs/design/web.md, "Streams").

// liveStream is one open stream as the recheck sees it.
type liveStream struct {
	sess  *session
	r     *http.Request // the stream's request: its cookie, tailnet login and peer
	needs []api.Class   // what the grant must still allow

	once  sync.Once
	ended chan struct{} // closed when the recheck ends the stream
	why   string        // written before ended is closed
}

// end ends the stream for why; the first reason wins.
func (ls *liveStream) end(why string) {
	ls.once.Do(func() {
		ls.why = why
		close(ls.ended)
	})
}

// reason is why the stream was ended; call it once ended is closed.
func (ls *liveStream) reason() string { return ls.why }

// trackStream lists an admitted stream for the recheck; untrack removes
// it (the stream's release does both: see admitStream).
func (s *Server) trackStream(rq *request, r *http.Request, needs ...api.Class) *liveStream {
	ls := &liveStream{sess: rq.sess, r: r, needs: needs, ended: make(chan struct{})}
	s.mu.Lock()
	s.live[ls] = struct{}{}
	s.mu.Unlock()
	return ls
}

func (s *Server) untrackStream(ls *liveStream) {
	s.mu.Lock()
	delete(s.live, ls)
	s.mu.Unlock()
}

// recheckStreams ends every open stream its session's grant in force no
// longer lets stay open; cause says what prompted the check, for the log.
func (s *Server) recheckStreams(cause string) {
	s.mu.Lock()
	open := make([]*liveStream, 0, len(s.live))
	for ls := range s.live {
		open = append(open, ls)
	}
	s.mu.Unlock()
	for _, ls := range open {
		why := s.streamRefusal(ls)
		if why == "" {
			continue
		}
		s.log.Info("dashboard stream ended: its grant no longer lets it stay open",
			logkey.Session, ls.sess.who(), logkey.Path, ls.r.URL.Path, logkey.Reason, why, logkey.Cause, cause)
		ls.end(why)
	}
}

// streamRefusal is why ls may no longer stay open, or "".
func (s *Server) streamRefusal(ls *liveStream) string {
	if ls.sess.device != "" {
		// A device's grant changes only by its revocation, whose channel
		// ends its streams by itself; Devices.Live would also note the
		// device seen (a write of the store) at every recheck.
		if !s.signedIn(ls.sess) {
			return "signed out: " + ls.sess.who() + " is signed out or has no grant here now"
		}
		return ""
	}
	grant, ok := s.liveSession(ls.r, ls.sess)
	if !ok {
		return "signed out: " + ls.sess.who() + " is signed out or has no grant here now"
	}
	for _, c := range ls.needs {
		if !grant.Allows(api.FacadeNamespace, c) {
			return "the grant of " + ls.sess.who() + " no longer includes " + string(c)
		}
	}
	return ""
}

// streamRecheck is how often the open streams are checked again besides
// at reloads. A variable for the tests.
var streamRecheck = time.Second

// recheckLoop runs recheckStreams at every reload and every streamRecheck
// until ctx ends.
func (s *Server) recheckLoop(ctx context.Context, reloads <-chan struct{}) {
	tick := time.NewTicker(streamRecheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-reloads:
			s.recheckStreams("reload")
		case <-tick.C:
			s.recheckStreams("periodic")
		}
	}
}

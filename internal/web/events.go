package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// hub fans the daemon's events out to the open event streams. It never
// blocks on a stream: a stream whose queue is full is marked to resync
// (its page fetches everything again), so one slow browser costs nothing
// but its own freshness.
//
// Each event is encoded once, here, into the frame every stream writes as
// it is: with many pages open, an event costs one encoding and a write
// per page, not an encoding per page.
type hub struct {
	mu   sync.Mutex
	subs map[*stream]struct{}
	// gen counts the events published: a page's live part rendered at one
	// generation is every page's at that generation (fragments.go).
	gen atomic.Uint64
}

type stream struct {
	ch     chan []byte   // encoded "unit" frames
	resync chan struct{} // capacity 1: events were dropped
}

func newHub() *hub { return &hub{subs: map[*stream]struct{}{}} }

// run publishes events until ctx ends; a reload also signals reloads
// (capacity 1, never blocking: one pending recheck covers many reloads).
func (h *hub) run(ctx context.Context, events <-chan api.Event, reloads chan<- struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-events:
			h.publish(ev)
			if ev.Kind == api.EventReload {
				select {
				case reloads <- struct{}{}:
				default:
				}
			}
		}
	}
}

func (h *hub) publish(ev api.Event) {
	h.gen.Add(1)
	data, err := json.Marshal(ev)
	if err != nil {
		return // an api.Event always encodes
	}
	frame := make([]byte, 0, len(data)+len("event: unit\ndata: \n\n"))
	frame = append(frame, "event: unit\ndata: "...)
	frame = append(frame, data...)
	frame = append(frame, "\n\n"...)
	h.mu.Lock()
	defer h.mu.Unlock()
	for st := range h.subs {
		select {
		case st.ch <- frame:
		default:
			select {
			case st.resync <- struct{}{}:
			default:
			}
		}
	}
}

func (h *hub) add() *stream {
	st := &stream{ch: make(chan []byte, eventBuffer), resync: make(chan struct{}, 1)}
	h.mu.Lock()
	h.subs[st] = struct{}{}
	h.mu.Unlock()
	return st
}

func (h *hub) remove(st *stream) {
	h.mu.Lock()
	delete(h.subs, st)
	h.mu.Unlock()
}

// heartbeat is how often an idle event stream sends a comment, which also
// re-checks that its session is still signed in.
var heartbeat = 15 * time.Second

// serveEvents is the server-sent event stream of the pages (GET /events):
// "unit" events carry an api.Event, "resync" says some were dropped.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request, rq *request) {
	if !rq.may(api.Read) {
		s.fail(w, r, http.StatusForbidden, "this token's grant does not include read")
		return
	}
	ls, release, ok := s.admitStream(w, r, rq, api.Read)
	if !ok {
		return
	}
	defer release()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	st := s.hub.add()
	defer s.hub.remove(st)
	write := func(format string, a ...any) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := fmt.Fprintf(w, format, a...); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	writeFrame := func(frame []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := w.Write(frame); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write("retry: 1000\n: signed in as %s\n\n", rq.sess.who()) {
		return
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		case <-rq.sess.revoked:
			_ = write("event: signedout\ndata: {}\n\n")
			return
		case <-ls.ended:
			// Signed out by a reload or a revoked token, or the grant
			// lost read: the page goes to the sign-in, which says why.
			_ = write("event: signedout\ndata: {}\n\n")
			return
		case frame := <-st.ch:
			if !writeFrame(frame) {
				return
			}
		case <-st.resync:
			if !write("event: resync\ndata: {}\n\n") {
				return
			}
		case <-tick.C:
			if _, ok := s.liveSession(r, rq.sess); !ok {
				_ = write("event: signedout\ndata: {}\n\n")
				return
			}
			if !write(": ping\n\n") {
				return
			}
		}
	}
}

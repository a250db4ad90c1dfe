package web

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logkey"
)

// The fleet's live part (GET /?fragment=1), shared by every open page.
// Each event marks every page stale and each fetches the part again, so
// with many pages open one event would render the fleet once per page.
// Unfiltered and with no other hosts' sections, the part is the same for
// every page with the same write grant (it carries no token: the rows'
// buttons submit a form outside it),
// so it is rendered once per event generation (hub.gen) and served to the
// others as rendered, compressed once too.

// fragMaxAge bounds how long a rendered part is served while no event
// comes: its "idle 3m" and "next fire in" texts age.
const fragMaxAge = time.Second

// fragCache holds the rendered live part, one entry per write grant.
type fragCache struct {
	entries [2]fragEntry
}

// fragEntry is one rendering; mu is held while it is rendered, so pages
// that ask at once wait for one rendering instead of each making its own.
type fragEntry struct {
	mu   sync.Mutex
	gen  uint64    // the hub's generation it was rendered at
	at   time.Time // when
	body []byte
	gz   []byte // body gzip-compressed; nil when too small to gain
}

// hasRemotes reports whether the fleet shows other hosts' sections: their
// rows carry the session's token and the session's grant on each host, so
// a part with them is rendered for each page.
func (s *Server) hasRemotes() bool {
	return s.opt.Remotes != nil && len(s.opt.Remotes.Fleets()) > 0
}

// serveFleetFragment answers GET /?fragment=1 with no filter and no
// other hosts.
func (s *Server) serveFleetFragment(w http.ResponseWriter, r *http.Request, rq *request) {
	write := rq.may(api.Write)
	e := &s.frags.entries[boolIndex(write)]
	e.mu.Lock()
	gen := s.hub.gen.Load()
	if e.body == nil || e.gen != gen || time.Since(e.at) > fragMaxAge {
		v, err := s.fleet(r.Context(), "")
		if err != nil {
			e.mu.Unlock()
			s.failOp(w, r, err)
			return
		}
		var buf bytes.Buffer
		if err := s.pages.t.ExecuteTemplate(&buf, "fleet-live", s.newPage(rq, "Fleet", v)); err != nil {
			e.mu.Unlock()
			s.log.Error("rendering a page", logkey.Path, "fleet-live", logkey.Err, err)
			http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
			return
		}
		e.gen, e.at, e.body, e.gz = gen, time.Now(), buf.Bytes(), gzipped(buf.Bytes())
	}
	body, gz := e.body, e.gz
	e.mu.Unlock()
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Add("Vary", "Accept-Encoding")
	if gz != nil && acceptsGzip(r) {
		hdr.Set("Content-Encoding", "gzip")
		body = gz
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// gzipped is b compressed, or nil when b is too small to gain from it.
func gzipped(b []byte) []byte {
	if len(b) < gzipMin {
		return nil
	}
	var out bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(&out)
	_, _ = zw.Write(b)
	_ = zw.Close()
	gzipWriters.Put(zw)
	return out.Bytes()
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

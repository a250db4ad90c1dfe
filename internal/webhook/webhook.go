// Package webhook starts jobs from outside events (docs/design/events.md): the
// [webhook.NAME] routes on the listener of [daemon] webhook_listen. A
// delivery is bounded (413), verified (github, gitlab, gitea, standard
// webhooks, bearer; 401), deduplicated by its delivery id and, where the
// signature covers the body alone, by its body, for a day across daemon
// restarts (200, nothing runs), rate-limited per route (429; the refusals
// of each source have a budget of their own), filtered by event, and then
// written to a 0600 file that each triggered run gets as
// HARNESS_EVENT_FILE (never on its command line). The file goes when the
// run's record leaves the run history.
package webhook

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/endpoint"
	"github.com/harness-dev/harness/internal/logkey"
)

// Environment of a triggered run.
const (
	EnvEventFile = "HARNESS_EVENT_FILE"
	EnvEvent     = "HARNESS_EVENT"
	EnvDelivery  = "HARNESS_DELIVERY"
	EnvWebhook   = "HARNESS_WEBHOOK"
)

// DedupWindow is how long a delivery id is remembered.
const DedupWindow = 24 * time.Hour

// Options configure a Server.
type Options struct {
	// Dir holds the dedup record and the event files (0700).
	Dir string
	// Trigger starts job with env added to its run (control.TriggerWebhook).
	Trigger func(ctx context.Context, job string, env []string) (api.TriggerResult, error)
	// RunKept reports whether the run history still holds run; an event
	// file is removed once it does not.
	RunKept func(run uint64) bool
	Now     func() time.Time
	Logger  *slog.Logger
}

// Server serves the webhook routes.
type Server struct {
	opt    Options
	routes atomic.Pointer[map[string]*route] // by path
	dedup  *dedup
	files  *files
	mu     sync.Mutex
	stats  map[string]*counters // by name, across reloads
	quit   chan struct{}
	done   chan struct{}
}

type route struct {
	cfg      *config.Webhook
	bucket   *bucket   // verified deliveries
	failures *failures // refused requests, by source
	c        *counters
}

type counters struct {
	accepted, ignored, replayed, rejected, limited, sourceLimited, tooLarge, triggered atomic.Uint64
}

// New opens the state under opt.Dir and starts the hourly sweep of event
// files.
func New(opt Options) (*Server, error) {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if err := os.MkdirAll(filepath.Join(opt.Dir, "events"), 0o700); err != nil {
		return nil, err
	}
	d, err := openDedup(filepath.Join(opt.Dir, "deliveries.jsonl"), opt.Now)
	if err != nil {
		return nil, err
	}
	s := &Server{opt: opt, dedup: d, files: openFiles(filepath.Join(opt.Dir, "events")), stats: map[string]*counters{},
		quit: make(chan struct{}), done: make(chan struct{})}
	empty := map[string]*route{}
	s.routes.Store(&empty)
	s.Sweep()
	go s.sweeper()
	return s, nil
}

// Close stops the sweep and closes the dedup record.
func (s *Server) Close() error {
	close(s.quit)
	<-s.done
	return s.dedup.close()
}

func (s *Server) sweeper() {
	defer close(s.done)
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
			s.Sweep()
		}
	}
}

// Sweep removes the event files of runs the history no longer holds.
func (s *Server) Sweep() { s.files.sweep(s.opt.RunKept, s.opt.Now()) }

// Apply puts routes in force (at start and after every reload). A route
// whose table is unchanged keeps its rate-limit bucket.
func (s *Server) Apply(hooks map[string]*config.Webhook) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.routes.Load()
	next := map[string]*route{}
	for _, name := range slices.Sorted(maps.Keys(hooks)) {
		w := hooks[name]
		c := s.stats[name]
		if c == nil {
			c = &counters{}
			s.stats[name] = c
		}
		r := &route{cfg: w, c: c, bucket: newBucket(w.RateLimit, s.opt.Now()), failures: newFailures(w.RateLimit)}
		if o, ok := old[w.Path]; ok && o.cfg.Name == name && o.cfg.RateLimit == w.RateLimit {
			r.bucket, r.failures = o.bucket, o.failures
		}
		next[w.Path] = r
	}
	s.routes.Store(&next)
}

// Stats are the routes' counters, by name.
func (s *Server) Stats() []api.WebhookStats {
	routes := *s.routes.Load()
	out := []api.WebhookStats{}
	for _, r := range routes {
		c := r.c
		out = append(out, api.WebhookStats{Name: r.cfg.Name, Path: r.cfg.Path, Accepted: c.accepted.Load(),
			Ignored: c.ignored.Load(), Replayed: c.replayed.Load(), Rejected: c.rejected.Load(),
			Limited: c.limited.Load(), SourceLimited: c.sourceLimited.Load(), TooLarge: c.tooLarge.Load(), Triggered: c.triggered.Load()})
	}
	slices.SortFunc(out, func(a, b api.WebhookStats) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	return out
}

// answer writes a small JSON answer.
func answer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

type runResult struct {
	Harness string `json:"harness"`
	RunID   uint64 `json:"run_id,omitempty"`
	Skipped bool   `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
}

// ServeHTTP answers one delivery. It verifies before it rate-limits: only
// a verified delivery takes from the route's bucket, so a stranger's junk
// cannot 429 the sender's real ones; the refusals of each source have a
// budget of their own (failures), past which that source gets 429 before
// its body is read.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rt, ok := (*s.routes.Load())[req.URL.Path]
	if !ok {
		answer(w, http.StatusNotFound, map[string]string{"error": "no webhook at this path"})
		return
	}
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		answer(w, http.StatusMethodNotAllowed, map[string]string{"error": "POST only"})
		return
	}
	cfg, log := rt.cfg, s.opt.Logger.With(logkey.Webhook, rt.cfg.Name)
	src := source(req)
	if rt.failures.blocked(src, s.opt.Now()) {
		rt.c.sourceLimited.Add(1)
		w.Header().Set("Retry-After", "60")
		answer(w, http.StatusTooManyRequests, map[string]string{"error": "too many refused deliveries from this address"})
		return
	}
	body, refused := s.read(w, req, rt, src)
	if refused {
		return
	}
	secret, err := s.secret(cfg)
	if err == nil && secret == "" {
		err = fmt.Errorf("%s: resolves to an empty string: %w", cfg.SecretAt, ErrNoSecret)
	}
	if err != nil {
		log.Error("webhook: secret", logkey.Err, err)
		answer(w, http.StatusInternalServerError, map[string]string{"error": "the webhook's secret is not available"})
		return
	}
	d, err := Verify(cfg.Verify, secret, req.Header, body, s.opt.Now())
	if err != nil {
		rt.failures.fail(src, s.opt.Now())
		rt.c.rejected.Add(1)
		log.Warn("webhook: delivery refused", logkey.Remote, req.RemoteAddr, logkey.Err, err)
		if errors.Is(err, ErrNoDelivery) {
			answer(w, http.StatusBadRequest, map[string]string{"error": "a delivery id is required"})
			return
		}
		answer(w, http.StatusUnauthorized, map[string]string{"error": "signature or token does not match"})
		return
	}
	// A replay answers 200 before the bucket: it must not use it up either.
	if s.dedup.known(cfg.Name, d) {
		s.replayed(w, rt, d)
		return
	}
	if !rt.bucket.take(s.opt.Now()) {
		rt.c.limited.Add(1)
		w.Header().Set("Retry-After", "60")
		answer(w, http.StatusTooManyRequests, map[string]string{"error": "rate limit of this webhook reached"})
		return
	}
	isNew, err := s.dedup.add(cfg.Name, d)
	if err != nil {
		log.Warn("webhook: delivery record", logkey.Delivery, d.ID, logkey.Err, err)
	}
	if !isNew {
		s.replayed(w, rt, d)
		return
	}
	if !Wanted(cfg.Events, d) {
		rt.c.ignored.Add(1)
		answer(w, http.StatusOK, map[string]string{"status": "ignored", "event": d.Event})
		return
	}
	rt.c.accepted.Add(1)
	res := s.trigger(req.Context(), cfg, d, body, log)
	answer(w, http.StatusAccepted, map[string]any{"status": "accepted", "event": d.Event, "runs": res})
}

// read reads the body within max_body_bytes; refused, it has been
// answered and counted against src.
func (s *Server) read(w http.ResponseWriter, req *http.Request, rt *route, src string) (body []byte, refused bool) {
	err := error(&http.MaxBytesError{Limit: rt.cfg.MaxBody})
	if req.ContentLength <= rt.cfg.MaxBody {
		body, err = readBody(w, req, rt.cfg.MaxBody)
	}
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		return body, false
	case errors.As(err, &tooBig):
		rt.c.tooLarge.Add(1)
		answer(w, http.StatusRequestEntityTooLarge, map[string]string{"error": "body over max_body_bytes"})
	default:
		answer(w, http.StatusBadRequest, map[string]string{"error": "could not read the body"})
	}
	rt.failures.fail(src, s.opt.Now())
	return nil, true
}

func (s *Server) replayed(w http.ResponseWriter, rt *route, d Delivery) {
	rt.c.replayed.Add(1)
	answer(w, http.StatusOK, map[string]string{"status": "duplicate", "delivery": d.ID})
}

// trigger writes the payload once per job and starts each.
func (s *Server) trigger(ctx context.Context, cfg *config.Webhook, d Delivery, body []byte, log *slog.Logger) []runResult {
	var out []runResult
	for _, job := range cfg.Harnesses {
		r := runResult{Harness: job}
		path, err := s.files.write(cfg.Name, body)
		if err != nil {
			log.Error("webhook: event file", logkey.Err, err)
			r.Error = "could not keep the payload"
			out = append(out, r)
			continue
		}
		env := []string{EnvEventFile + "=" + path, EnvEvent + "=" + d.Event, EnvDelivery + "=" + d.ID, EnvWebhook + "=" + cfg.Name}
		// Not the request's context: the sender may hang up, the job starts anyway.
		tr, err := s.opt.Trigger(context.WithoutCancel(ctx), job, env)
		switch {
		case err != nil:
			r.Error = err.Error()
			s.files.remove(path)
			log.Error("webhook: trigger", logkey.Job, job, logkey.Err, err)
		case tr.Skipped:
			r.Skipped = true
			s.files.remove(path)
		default:
			r.RunID = tr.RunID
			s.files.bind(path, tr.RunID)
			if c := s.counters(cfg.Name); c != nil {
				c.triggered.Add(1)
			}
			log.Info("webhook: job started", logkey.Job, job, logkey.Run, tr.RunID, logkey.Delivery, d.ID)
		}
		out = append(out, r)
	}
	s.Sweep()
	return out
}

func (s *Server) counters(name string) *counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats[name]
}

// secret expands the table's secret from its env_file and env, read now.
func (s *Server) secret(cfg *config.Webhook) (string, error) {
	vars, err := endpoint.Vars(cfg.EnvFile, cfg.Env)
	if err != nil {
		return "", err
	}
	return endpoint.Expand(cfg.Secret, func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	})
}

func readBody(w http.ResponseWriter, req *http.Request, limit int64) ([]byte, error) {
	r := http.MaxBytesReader(w, req.Body, limit)
	defer r.Close()
	return io.ReadAll(r)
}

// randomName is 16 random hex digits.
func randomName() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

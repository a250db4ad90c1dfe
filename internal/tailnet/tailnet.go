// Package tailnet joins a tailnet as a node of the daemon's own (tsnet)
// and serves the page for people there (docs/design/web.md): no port is
// opened on the host, the node makes outbound connections only. Each
// request is handed on with the login the tailnet says sent it (WhoIs);
// what that login may do is the caller's to decide.
//
// tsnet adds about 27 MB to the binary, so it is built only with the
// build tag "tailnet" (node.go); without it Start reports that this
// build has no tailnet (off.go).
package tailnet

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Options configure Start.
type Options struct {
	// Hostname is the node's name on the tailnet.
	Hostname string
	// AuthKey registers the node; empty when Dir holds a node already
	// logged in. It is a secret: never logged, scrubbed from errors.
	AuthKey string
	// Dir keeps the node's keys and state between restarts.
	Dir string
	// ControlURL is the coordination server; empty is Tailscale's.
	ControlURL string
	// Handler answers the tailnet's requests.
	Handler http.Handler
	// Identify returns r carrying the tailnet login that sent it; it is
	// called for every request the tailnet could name a user for.
	Identify func(r *http.Request, login string) *http.Request
	// Serve serves h on ln until the returned shutdown is called.
	Serve func(ln net.Listener, h http.Handler) (shutdown func(context.Context) error)
	// Logger receives the node's logs; nil discards them.
	Logger *slog.Logger
	// UpTimeout is how long joining may take before daemon_info says the
	// node is not up (it keeps trying); 0 means DefaultUpTimeout.
	UpTimeout time.Duration
}

// DefaultUpTimeout is how long joining may take before it is reported.
const DefaultUpTimeout = 30 * time.Second

// ErrNotBuilt is Start's failure in a build without the tailnet tag.
var ErrNotBuilt = errors.New(`this harness is built without tailnet support: build it with "go build -tags tailnet ./cmd/harness" (docs/web.md#on-a-tailnet)`)

// state is what the node says about itself, safe for concurrent use.
type state struct {
	mu      sync.Mutex
	url     string
	failure string
	hosts   []string
}

// Info is the node's URL for a person, and why it does not serve ("" when
// it does).
func (s *state) Info() (url, failure string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url, s.failure
}

// Hosts are the node's names and addresses on the tailnet, accepted in
// Host and Origin once it is up.
func (s *state) Hosts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.hosts...)
}

func (s *state) setFailure(f string) {
	s.mu.Lock()
	s.failure = f
	s.mu.Unlock()
}

// scrub takes the auth key out of a message from tsnet or the control
// server, whatever they chose to say.
func scrub(msg, key string) string {
	if key == "" {
		return msg
	}
	return strings.ReplaceAll(msg, key, "[auth key]")
}

// Package broker holds one go-sdk client session per upstream MCP server
// and serves the upstreams' tools to downstream sessions under namespaced
// names (KEY__tool).
//
// The supervisor owns the processes and connections; the broker only
// serves them. On every run the supervisor hands it an api.UpstreamRun
// (Serve), whose Link's type picks the transport (transport.go: a child's
// pipes, a remote server's URL and headers in remote.go); on every exit
// it calls Detach with when the next attempt is due. The broker never
// blocks its caller: the handshake and listings run on a goroutine per
// served run, and all shared state sits behind one mutex.
package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/pins"
	"github.com/harness-dev/harness/internal/ratelimit"
	"github.com/harness-dev/harness/internal/upauth"
)

// ProtocolVersion is the MCP version every upstream session is pinned to:
// the classic initialize handshake, never the stateless discover of newer
// revisions, so any stdio server works behind the broker.
const ProtocolVersion = "2025-11-25"

// Defaults for Options fields left zero.
const (
	DefaultMaxInFlight    = 32
	DefaultConnectTimeout = 30 * time.Second
	DefaultKeepAlive      = 30 * time.Second
)

// Options tunes a Broker.
type Options struct {
	// MaxInFlight bounds the concurrent calls on one upstream; further
	// callers wait (ctx-aware). Zero means DefaultMaxInFlight.
	MaxInFlight int
	// CallTimeout bounds one proxied call, on top of the caller's context.
	// Zero means no bound beyond the caller's context.
	CallTimeout time.Duration
	// ConnectTimeout bounds the initialize handshake plus the first tool
	// listing. Zero means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// KeepAlive is the ping interval of remote upstream sessions, so a
	// server that went away is noticed while nobody calls it. Zero means
	// DefaultKeepAlive.
	KeepAlive time.Duration
	// Mask, when set, hides the daemon's known secrets (every env_file
	// value, internal/mask) in the results of process upstreams, as a
	// remote one's headers are scrubbed; transports get it in Env.Mask.
	Mask func(string) string
	// OAuth keeps the sign-ins of the upstreams with auth = "oauth"
	// (Upstream.OAuth); their connections take and refresh tokens there.
	OAuth *upauth.Store
	// Pins, when set, pins every upstream's tools and holds back the ones
	// that changed (gateway.go); nil pins nothing.
	Pins *pins.Store
	// OnToolChanged, when set, hears of each tool a listing holds back
	// (event tool_changed). It runs on a broker goroutine and must not
	// block.
	OnToolChanged func(ToolChange)
	// Now is the clock of the rate limits; nil means time.Now.
	Now func() time.Time
}

// Upstream is one configured [mcp.KEY] table, Policy how its tools are
// classified, Status what the broker knows of its session: the types
// control speaks (api), so the broker is what control needs as it is.
type (
	Upstream = api.UpstreamRef
	Policy   = api.ToolPolicy
	Status   = api.UpstreamSession
)

// Broker proxies tool calls from downstream sessions to upstream servers.
// All methods are safe for concurrent use.
type Broker struct {
	log  *slog.Logger
	opts Options

	// ctx is cancelled by Close; every attach goroutine derives from it.
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	seq         atomic.Uint64 // upstream progress tokens
	fastCalls   atomic.Uint64 // calls forwarded as bytes (fast.go)
	tokenPrefix string        // random, per broker

	mu           sync.Mutex
	closed       bool
	ups          map[string]*upstream // by unit name
	listeners    map[uint64]func()
	nextListener uint64
	progress     map[string]*progressRoute // by upstream progress token
	changedCh    chan struct{}             // closed and replaced by bump
	onUpdated    func(uri string)          // resources/updated listener (resources.go)

	subs subs // upstream subscriptions held for sessions (resources.go)

	limiter     *ratelimit.Limiter  // rate limits' buckets (gateway.go)
	rateLimited atomic.Uint64       // calls refused by a rate limit
	callerRates map[string]api.Rate // mcp_rate by harness; guarded by mu
}

// upstream is the broker's view of one configured unit. Guarded by Broker.mu.
type upstream struct {
	unit, key, project string
	sem                chan struct{} // in-flight bound; survives restarts
	policy             Policy
	pin                api.PinMode
	rate               api.Rate
	toolRates          map[string]api.Rate
	// held are the listed tools the pins hold back (gateway.go), by the
	// upstream's own name: not served, and a call answers tool_quarantined.
	held        map[string]pins.Held
	callTimeout time.Duration
	maxResult   int // max_result_bytes; 0: jsonl's default

	// backs are the downstream sessions with calls in flight here, and
	// how many each (back.go).
	backs map[Back]int
	// lastBack is the session whose call ended last, and when, so a log
	// message that trails its call's result still reaches it (logBack).
	lastBack   Back
	lastBackAt time.Time
	// prompts are the upstream's prompts by their own names, from its
	// last prompts/list (prompts.go).
	prompts map[string]*mcp.Prompt
	// res are its resources and templates (resources.go).
	res resourceState

	run     uint64
	conn    *conn              // the attached run, nil when none
	session *mcp.ClientSession // non-nil exactly while connected
	// all is the last listing, namespaced (by the upstream's own name), and
	// listWarnings its tools that cannot be served; installLocked derives
	// from them and the policy what sessions see: tools (excluded ones
	// left out), classes (every tool of all) and warnings.
	all          map[string]*mcp.Tool
	listWarnings []string
	tools        map[string]*mcp.Tool
	classes      map[string]api.ToolClass
	listed       bool // tools came from at least one successful listing
	warnings     []string
	lastErr      string
	nextRetry    time.Time
	oauth        bool
	// needsLogin is why the last connection had no usable token
	// (upauth.LoginError), "" otherwise: calls answer it.
	needsLogin string
}

// conn is one served run: the goroutine serving it ends when cancel is
// called or the upstream closes the connection.
type conn struct {
	run    uint64
	cancel context.CancelFunc
	relist chan struct{} // buffered 1: tools/list_changed coalesces
	failed bool          // the session ended or never came up; guarded by Broker.mu
	// t connects to the run (transport.go); started (nil: nobody asks)
	// learns how its start ended.
	t       Transport
	started func(error)
	// fast forwards tools/call as bytes on this run's connection, when
	// its transport allows it (fast.go); nil otherwise.
	fast atomic.Pointer[fastLink]
	// drop (buffered 1) ends the session, probe (buffered 1) asks for a
	// ping that ends it if it fails; only a networked transport's calls
	// use them.
	drop  chan error
	probe chan error
}

// explain turns an error of this run into what the broker may record,
// log and answer (a networked transport scrubs its secrets from it).
func (c *conn) explain(err error) error {
	if n, ok := c.t.(networked); ok && err != nil {
		return n.explain(err)
	}
	return err
}

// New returns a broker with no upstreams; call Configure next.
func New(logger *slog.Logger, opts Options) *Broker {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = DefaultKeepAlive
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ctx, stop := context.WithCancel(context.Background())
	var rnd [12]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		panic(fmt.Sprintf("broker: crypto/rand failed: %v", err)) // never happens on Linux
	}
	return &Broker{
		tokenPrefix: hex.EncodeToString(rnd[:]),
		log:         logger,
		opts:        opts,
		ctx:         ctx,
		stop:        stop,
		ups:         map[string]*upstream{},
		listeners:   map[uint64]func(){},
		progress:    map[string]*progressRoute{},
		changedCh:   make(chan struct{}),
		limiter:     ratelimit.New(),
	}
}

// Changed returns a channel closed at the next change of what Status or
// Tools report (configured, connected, disconnected, re-listed). Take a
// fresh channel after each wake-up, before re-reading the state.
func (b *Broker) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changedCh
}

// bump wakes Changed waiters. Caller holds b.mu.
func (b *Broker) bump() {
	close(b.changedCh)
	b.changedCh = make(chan struct{})
}

// Configure replaces the configured set (unit name -> Upstream). A removed
// or redefined unit loses its session and its tools; a new one is listed
// as not connected until its first run is served; a changed Policy re-classifies
// the tools already listed. Change listeners fire when tools disappeared
// or changed class.
func (b *Broker) Configure(ups map[string]Upstream) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	changed := false
	var repin []*upstream
	for unit, u := range b.ups {
		if want, ok := ups[unit]; ok && want.Key == u.key && want.Project == u.project {
			u.callTimeout, u.maxResult, u.oauth = want.CallTimeout, want.MaxResult, want.OAuth
			u.rate, u.toolRates = want.Rate, want.ToolRates
			if want.Pin != u.pin {
				u.pin = want.Pin
				repin = append(repin, u)
			}
			if !policyEqual(want.Tools, u.policy) {
				promptsChanged := !slices.Equal(want.Tools.ExcludePrompts, u.policy.ExcludePrompts) && len(u.prompts) > 0 ||
					!slices.Equal(want.Tools.ExcludeResources, u.policy.ExcludeResources)
				u.policy = want.Tools
				if b.installLocked(u) || promptsChanged {
					changed = true
					b.log.Info("broker: upstream tools re-classified", logkey.Unit, unit, logkey.Key, u.key)
				}
			}
			continue
		}
		if u.conn != nil {
			u.conn.cancel()
			u.conn, u.session = nil, nil
		}
		changed = changed || len(u.tools) > 0
		delete(b.ups, unit)
		b.log.Info("broker: upstream removed", logkey.Unit, unit, logkey.Key, u.key, logkey.Project, u.project)
	}
	for unit, want := range ups {
		if _, ok := b.ups[unit]; ok {
			continue
		}
		b.ups[unit] = &upstream{
			unit: unit, key: want.Key, project: want.Project, policy: want.Tools,
			callTimeout: want.CallTimeout, maxResult: want.MaxResult, oauth: want.OAuth, sem: make(chan struct{}, b.opts.MaxInFlight),
			pin: want.Pin, rate: want.Rate, toolRates: want.ToolRates,
		}
	}
	b.bump()
	b.mu.Unlock()
	if changed {
		b.fire()
	}
	for _, u := range repin {
		b.repin(u)
	}
	b.forgetBuckets()
}

// Detach records that run of unit exited: the session is closed, the tools
// stay listed and calls fail with upstream_unavailable naming nextRetry
// (zero: no attempt scheduled). A Detach for an older run than the one
// attached is ignored.
func (b *Broker) Detach(unit string, run uint64, nextRetry time.Time, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.ups[unit]
	if b.closed || u == nil || run < u.run {
		b.log.Debug("broker: detach ignored", logkey.Unit, unit, logkey.Run, run)
		return
	}
	if u.conn != nil {
		u.conn.cancel()
	}
	u.run, u.conn, u.session = run, nil, nil
	u.nextRetry, u.lastErr = nextRetry, reason
	b.bump()
	b.log.Info("broker: upstream detached", logkey.Unit, unit, logkey.Run, run, logkey.Reason, reason, logkey.NextRetry, nextRetry)
}

// OnChange registers f to run whenever the tools some session may see
// changed (an upstream listed new tools, or the configuration removed
// some). f runs on a broker goroutine, possibly concurrently with itself,
// and must not block: it holds up that upstream's session and Close.
func (b *Broker) OnChange(f func()) (cancel func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.nextListener
	b.nextListener++
	b.listeners[id] = f
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.listeners, id)
	}
}

func (b *Broker) fire() {
	b.mu.Lock()
	fs := make([]func(), 0, len(b.listeners))
	for _, f := range b.listeners {
		fs = append(fs, f)
	}
	b.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// Status reports every configured upstream, sorted by unit name.
func (b *Broker) Status() []Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Status, 0, len(b.ups))
	for _, u := range b.ups {
		out = append(out, Status{
			Unit: u.unit, Key: u.key, Project: u.project,
			Connected: u.session != nil, Tools: len(u.tools),
			LastError: u.lastErr, NextRetry: u.nextRetry,
			ToolClasses: slices.SortedFunc(maps.Values(u.classes), func(x, y api.ToolClass) int { return strings.Compare(x.Tool, y.Tool) }),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Unit < out[j].Unit })
	return out
}

// Warnings lists problems an operator should see: tools not served because
// their namespaced name is too long, keys that cannot be addressed, tools
// matched by both read_tools and write_tools, and project upstreams
// shadowing a global one of the same key.
func (b *Broker) Warnings() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	if b.opts.Pins != nil {
		if w := b.opts.Pins.Warning(); w != "" {
			out = append(out, w)
		}
	}
	for _, u := range b.ups {
		out = append(out, u.warnings...)
		if u.project != "" {
			if g := b.ups[u.key]; g != nil && g.project == "" {
				out = append(out, fmt.Sprintf("mcp.%s: project %s's upstream shadows the global one for its sessions", u.key, u.project))
			}
		}
	}
	sort.Strings(out)
	return out
}

// Close ends every upstream session and waits for the broker's goroutines.
// Calls made afterwards fail with upstream_unavailable.
func (b *Broker) Close() {
	b.mu.Lock()
	b.closed = true
	for _, u := range b.ups {
		u.conn, u.session = nil, nil
	}
	b.bump()
	b.mu.Unlock()
	b.stop()
	b.wg.Wait()
}

// closePipes closes pipes the broker will not use. A pipe the session
// already closed reports os.ErrClosed, which is expected and not logged.
func closePipes(log *slog.Logger, unit string, stdin io.WriteCloser, stdout io.ReadCloser) {
	for _, c := range []io.Closer{stdin, stdout} {
		if c == nil {
			continue
		}
		if err := c.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			log.Warn("broker: closing upstream pipe", logkey.Unit, unit, logkey.Err, err)
		}
	}
}

// visible returns the upstream with key that a session of project sees:
// the project's own upstream shadows a global one. Caller holds b.mu.
func (b *Broker) visible(project, key string) *upstream {
	var global *upstream
	for _, u := range b.ups {
		if u.key != key {
			continue
		}
		switch u.project {
		case "":
			global = u
		case project:
			if project != "" {
				return u
			}
		}
	}
	return global
}

// visibleAll returns the upstreams a session of project sees, sorted by key.
// Caller holds b.mu.
func (b *Broker) visibleAll(project string) []*upstream {
	keys := map[string]bool{}
	for _, u := range b.ups {
		keys[u.key] = true
	}
	var out []*upstream
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if u := b.visible(project, k); u != nil {
			out = append(out, u)
		}
	}
	return out
}

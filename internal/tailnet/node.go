//go:build tailnet

package tailnet

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"tailscale.com/client/local"
	"tailscale.com/tsnet"

	"github.com/harness-dev/harness/internal/logkey"
)

// Built reports whether this binary can join a tailnet.
const Built = true

// Node is the daemon's node on the tailnet.
type Node struct {
	state
	opt    Options
	log    *slog.Logger
	srv    *tsnet.Server
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when joining has ended, up or not

	shutdown func(context.Context) error // set by run once serving
}

// Start joins the tailnet in the background: the daemon never waits for
// it, and a node that does not come up says why through Info.
func Start(opt Options) *Node {
	if opt.UpTimeout <= 0 {
		opt.UpTimeout = DefaultUpTimeout
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Node{opt: opt, log: log.With(logkey.Component, "tailnet"), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	if err := os.MkdirAll(opt.Dir, 0o700); err != nil {
		n.fail(fmt.Errorf("state dir: %w", err))
		close(n.done)
		return n
	}
	n.srv = &tsnet.Server{
		Dir:        opt.Dir,
		Hostname:   opt.Hostname,
		AuthKey:    opt.AuthKey,
		ControlURL: opt.ControlURL,
		// What tsnet tells a user (a login URL, state changes) goes to
		// the daemon log, the key scrubbed; its backend's chatter does not.
		UserLogf: func(format string, args ...any) {
			n.log.Info(scrub(fmt.Sprintf(format, args...), opt.AuthKey))
		},
		Logf: func(string, ...any) {},
	}
	go n.run()
	return n
}

func (n *Node) fail(err error) {
	msg := "tailnet: " + scrub(err.Error(), n.opt.AuthKey)
	n.setFailure(msg)
	n.log.Error("the tailnet node is not up; everything else is served", logkey.Err, msg)
}

// run brings the node up and serves on it.
func (n *Node) run() {
	defer close(n.done)
	// Up waits as long as the control server cannot be reached, trying
	// again and again: watchJoin says why meanwhile.
	joined := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		n.watchJoin(joined)
	}()
	st, err := n.srv.Up(n.ctx)
	close(joined)
	<-watched // its last word comes before the node's own
	if n.ctx.Err() != nil {
		return
	}
	if err != nil {
		// A refused key or a control server's error: final.
		n.fail(err)
		return
	}
	lc, err := n.srv.LocalClient()
	if err != nil {
		n.fail(err)
		return
	}
	hosts := []string{n.opt.Hostname}
	dnsName := ""
	if st.Self != nil {
		dnsName = strings.TrimSuffix(st.Self.DNSName, ".")
	}
	if dnsName != "" {
		hosts = append(hosts, dnsName)
	}
	for _, ip := range st.TailscaleIPs {
		hosts = append(hosts, ip.String())
	}
	// HTTPS with the tailnet's certificate where the control server
	// offers one; plain HTTP otherwise, which the tailnet encrypts.
	var ln net.Listener
	url := ""
	if domains := n.srv.CertDomains(); len(domains) > 0 {
		hosts = append(hosts, domains...)
		ln, err = n.srv.ListenTLS("tcp", ":443")
		url = "https://" + domains[0]
	} else {
		ln, err = n.srv.Listen("tcp", ":80")
		url = "http://" + dnsName
		if dnsName == "" {
			url = "http://" + st.TailscaleIPs[0].String()
		}
	}
	if err != nil {
		n.fail(fmt.Errorf("listen: %w", err))
		return
	}
	shutdown := n.opt.Serve(ln, n.identify(lc))
	n.mu.Lock()
	n.url, n.failure, n.hosts = url, "", hosts
	n.shutdown = shutdown
	n.mu.Unlock()
	n.log.Info("tailnet node serving the page for people", logkey.URL, url)
}

// joinPoll is how often watchJoin asks tsnet how joining goes.
const joinPoll = time.Second

// watchJoin says in Info why the node is not up while Up waits: tsnet
// keeps trying a control server it cannot reach and says why only in
// its health messages (the last login error: a refused connection, a
// name that does not resolve, a TLS failure), so they are read every
// joinPoll and the latest login error is the node's failure at once; a
// control server that accepts and never answers leaves no error, and
// after UpTimeout the failure says so. Both stay until the node is up
// (run clears them); tsnet goes on trying.
func (n *Node) watchJoin(joined <-chan struct{}) {
	tick := time.NewTicker(joinPoll)
	defer tick.Stop()
	slow := time.NewTimer(n.opt.UpTimeout)
	defer slow.Stop()
	said := ""
	say := func(err error) {
		if err.Error() != said {
			said = err.Error()
			n.fail(err)
		}
	}
	for {
		select {
		case <-joined:
			return
		case <-n.ctx.Done():
			return
		case <-tick.C:
			if why := n.joinError(); why != "" {
				say(fmt.Errorf("not up yet, still trying: the control server %s: %s", n.controlName(), why))
			}
		case <-slow.C:
			if said == "" {
				say(fmt.Errorf("not up after %s: is the control server %s reachable?", n.opt.UpTimeout, n.controlName()))
			}
		}
	}
}

// joinError is tsnet's latest login error while joining, "" for none.
func (n *Node) joinError() string {
	lc, err := n.srv.LocalClient()
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(n.ctx, joinPoll)
	defer cancel()
	st, err := lc.StatusWithoutPeers(ctx)
	if err != nil {
		return ""
	}
	for _, h := range st.Health {
		if _, why, ok := strings.Cut(h, "last login error was: "); ok {
			return why
		}
	}
	return ""
}

// controlName is the control server as the failure names it.
func (n *Node) controlName() string {
	if n.opt.ControlURL == "" {
		return "(Tailscale's)"
	}
	return n.opt.ControlURL
}

// identify names each request's tailnet login (WhoIs) before the page
// sees it: a request the tailnet names no user for (a tagged node, an
// address it does not know) is refused here.
func (n *Node) identify(lc *local.Client) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who, err := lc.WhoIs(r.Context(), r.RemoteAddr)
		login := ""
		if err == nil && who.Node != nil && !who.Node.IsTagged() && who.UserProfile != nil {
			login = who.UserProfile.LoginName
		}
		if login == "" {
			n.log.Warn("tailnet request without a user refused", logkey.Remote, r.RemoteAddr, logkey.Err, err)
			http.Error(w, "the tailnet does not name a user for this device: harness answers only a user's own devices", http.StatusForbidden)
			return
		}
		n.opt.Handler.ServeHTTP(w, n.opt.Identify(r, login))
	})
}

// Close stops serving and leaves the tailnet, ending every goroutine the
// node started.
func (n *Node) Close(ctx context.Context) error {
	n.cancel()
	<-n.done
	n.mu.Lock()
	shutdown := n.shutdown
	n.mu.Unlock()
	var err error
	if shutdown != nil {
		err = shutdown(ctx)
	}
	if n.srv != nil {
		n.srv.Close()
	}
	return err
}

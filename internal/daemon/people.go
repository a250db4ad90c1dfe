package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/device"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/httpmcp"
	"github.com/harness-dev/harness/internal/web"
	"github.com/harness-dev/harness/internal/webtls"
)

// peopleListener is [web] listen (docs/design/web.md): the dashboard for
// people on an address of its own, TLS beyond loopback, never the MCP
// endpoint. It is bound at start; when it cannot be (a certificate that
// does not load, an address taken) the daemon logs why, shows it in
// daemon_info's web_error and serves everything else.
type peopleListener struct {
	store   *device.Store
	certs   *webtls.Manager // nil without TLS
	hosts   []string        // accepted in Host/Origin; the auto certificate's names
	ln      net.Listener    // the TCP listener; TLS is put on it by serve
	srv     *http.Server
	url     string // where a phone goes: public_url, or the bound address
	failure string
}

// listenPeople opens the device store, the certificate and the listener
// of [web] listen; nil when it is not set. A failure is kept, not
// returned: the daemon serves on without this door.
func listenPeople(w config.Web, stateDir string, log *slog.Logger) *peopleListener {
	if w.Listen == "" {
		return nil
	}
	p := &peopleListener{}
	fail := func(err error) *peopleListener {
		p.failure = err.Error()
		log.Error("the listener for people is not served; everything else is", logkey.Addr, w.Listen, logkey.Err, err)
		if p.ln != nil {
			p.ln.Close()
			p.ln = nil
		}
		return p
	}
	store, err := device.Open(stateDir, nil)
	if err != nil {
		return fail(err)
	}
	p.store = store
	host, _, _ := net.SplitHostPort(w.Listen)
	var extra []string
	extra = append(extra, host)
	if u, err := url.Parse(w.PublicURL); err == nil && w.PublicURL != "" {
		extra = append(extra, u.Hostname())
	}
	p.hosts = webtls.Hosts(extra...)
	switch {
	case w.TLS == config.TLSAuto:
		p.certs, err = webtls.Auto(stateDir, p.hosts, time.Now())
	case w.TLSCert != "":
		p.certs, err = webtls.Files(w.TLSCert, w.TLSKey)
	}
	if err != nil {
		return fail(fmt.Errorf("web: %w", err))
	}
	ln, err := net.Listen("tcp", w.Listen)
	if err != nil {
		return fail(fmt.Errorf("web: listen: %w", err))
	}
	scheme := "http"
	if p.certs != nil {
		scheme = "https"
	}
	p.ln = ln
	p.url = w.PublicURL
	if p.url == "" {
		p.url = scheme + "://" + phoneAddr(ln.Addr())
	}
	return p
}

// phoneAddr is the bound address as a phone would open it: an unspecified
// host (0.0.0.0, ::) becomes this machine's first non-loopback address.
func phoneAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, ad := range addrs {
				if n, ok := ad.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() && n.IP.To4() != nil {
					return net.JoinHostPort(n.IP.String(), port)
				}
			}
		}
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// serve answers with the dashboard, and only the dashboard.
func (p *peopleListener) serve(dash *web.Server, log *slog.Logger) {
	if p.ln == nil {
		return
	}
	p.srv = httpmcp.NewServer(dash, log)
	ln := httpmcp.LimitListener(p.ln, httpmcp.DefaultMaxConns())
	if p.certs != nil {
		// TLS outermost: the server sees a *tls.Conn and fills r.TLS
		// (Secure cookies go by it).
		ln = tls.NewListener(ln, p.certs.TLSConfig())
	}
	go func() {
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			// This door only: the rest of the daemon serves on.
			log.Error("listener for people failed", logkey.Err, err)
		}
	}()
	log.Info("listener for people serving", logkey.URL, p.url)
}

func (p *peopleListener) shutdown(ctx context.Context) error {
	if p.srv != nil {
		return p.srv.Shutdown(ctx)
	}
	if p.ln != nil {
		return p.ln.Close()
	}
	return nil
}

// errNotServing answers pair while the listener does not serve.
func (p *peopleListener) errNotServing() error {
	return errcode.Errorf(errcode.InvalidArgument, "the listener for people ([web] listen) is not serving: %s", p.failure)
}

// Pair is control.Devices.
func (p *peopleListener) Pair(a api.PairArgs) (api.PairResult, error) {
	if p.ln == nil {
		return api.PairResult{}, p.errNotServing()
	}
	code, res, err := p.store.Pair(a.Name, a.Grant, time.Duration(a.TTLS)*time.Second)
	if err != nil {
		return api.PairResult{}, err
	}
	res.URL = p.url + web.PairPath + "?code=" + url.QueryEscape(code)
	if p.certs != nil {
		res.Fingerprint = p.certs.Fingerprint()
	}
	return res, nil
}

// List is control.Devices.
func (p *peopleListener) List() []api.DeviceInfo {
	if p.store == nil {
		return []api.DeviceInfo{}
	}
	return p.store.List()
}

// Revoke is control.Devices.
func (p *peopleListener) Revoke(name string) (api.DeviceInfo, error) {
	if p.store == nil {
		return api.DeviceInfo{}, p.errNotServing()
	}
	return p.store.Revoke(name)
}

// Info is control.Devices: daemon_info's web_url, web_fingerprint and
// web_error.
func (p *peopleListener) Info() (string, string, string) {
	if p.ln == nil {
		return "", "", p.failure
	}
	if p.certs == nil {
		return p.url, "", ""
	}
	failure := ""
	if err := p.certs.Err(); err != nil {
		failure = fmt.Sprintf("serving the certificate loaded before: %v", err)
	}
	return p.url, p.certs.Fingerprint(), failure
}

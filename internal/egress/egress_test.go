package egress

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// start serves a proxy for cfg on a loopback listener and returns its URL.
func start(t *testing.T, cfg Config) (*Proxy, *url.URL) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := New(cfg)
	go p.Serve(l)
	t.Cleanup(p.Close)
	return p, &url.URL{Scheme: "http", Host: l.Addr().String()}
}

func client(proxy *url.URL) *http.Client {
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyURL(proxy),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
}

func okServer(t *testing.T, tlsOn bool) *httptest.Server {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached") })
	var s *httptest.Server
	if tlsOn {
		s = httptest.NewTLSServer(h)
	} else {
		s = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s
}

type denials struct {
	mu   sync.Mutex
	list []string
}

func (d *denials) add(target, reason string) {
	d.mu.Lock()
	d.list = append(d.list, target+": "+reason)
	d.mu.Unlock()
}

func (d *denials) all() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.list, "\n")
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestScenario_ProxyReachesOnlyTheListedAddress(t *testing.T) {
	allowed, other := okServer(t, false), okServer(t, false)
	allowedTLS := okServer(t, true)
	var d denials
	p, pu := start(t, Config{Allow: []string{strings.TrimPrefix(allowed.URL, "http://"), strings.TrimPrefix(allowedTLS.URL, "https://")}, OnDeny: d.add})
	c := client(pu)
	if code, body := get(t, c, allowed.URL+"/x"); code != 200 || body != "reached" {
		t.Fatalf("listed plain HTTP: %d %q", code, body)
	}
	if code, body := get(t, c, allowedTLS.URL+"/x"); code != 200 || body != "reached" {
		t.Fatalf("listed CONNECT: %d %q", code, body)
	}
	if code, body := get(t, c, other.URL+"/x"); code != http.StatusForbidden {
		t.Fatalf("unlisted plain HTTP: %d %q", code, body)
	}
	// An unlisted IP literal through CONNECT.
	if code, body := get(t, c, "https://"+strings.TrimPrefix(other.URL, "http://")+"/"); code == 200 {
		t.Fatalf("unlisted CONNECT reached: %q", body)
	}
	if n := p.Denied(); n != 2 {
		t.Fatalf("denied %d, want 2: %s", n, d.all())
	}
	if !strings.Contains(d.all(), strings.TrimPrefix(other.URL, "http://")+": "+ReasonNotListed) {
		t.Fatalf("denials: %s", d.all())
	}
}

func TestScenario_ProxyRefusesAListedNameResolvingElsewhere(t *testing.T) {
	srv := okServer(t, false)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	var mu sync.Mutex
	answer := netip.MustParseAddr("127.0.0.1")
	resolve := func(ctx context.Context, host string) ([]netip.Addr, error) {
		mu.Lock()
		defer mu.Unlock()
		return []netip.Addr{answer}, nil
	}
	var d denials
	p, pu := start(t, Config{Allow: []string{"api.example.test:" + port}, Resolve: resolve, OnDeny: d.add})
	c := client(pu)
	if code, body := get(t, c, "http://api.example.test:"+port+"/"); code != 200 {
		t.Fatalf("first answer: %d %q", code, body)
	}
	mu.Lock()
	answer = netip.MustParseAddr("127.0.0.2") // the name now points elsewhere
	mu.Unlock()
	if code, body := get(t, c, "http://api.example.test:"+port+"/"); code != http.StatusForbidden || !strings.Contains(body, ReasonRebinding) {
		t.Fatalf("rebound name: %d %q", code, body)
	}
	if p.Denied() != 1 {
		t.Fatalf("denied %d: %s", p.Denied(), d.all())
	}
}

func TestScenario_ProxyRefusesARequestSmuggledBeforeTheTunnel(t *testing.T) {
	srv := okServer(t, false)
	host := strings.TrimPrefix(srv.URL, "http://")
	var d denials
	p, pu := start(t, Config{Allow: []string{host}, OnDeny: d.add})
	c, err := net.Dial("tcp", pu.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "CONNECT "+host+" HTTP/1.1\r\nHost: "+host+"\r\n\r\nGET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	b, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(b), "HTTP/1.1 400") || p.Denied() != 1 {
		t.Fatalf("answer %q, denied %d", b, p.Denied())
	}
}

func TestScenario_ProxyIsBoundedInConnections(t *testing.T) {
	_, pu := start(t, Config{MaxConns: 1, HeaderTimeout: 30 * time.Second})
	held, err := net.Dial("tcp", pu.Host) // sends nothing: holds the only slot
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.Dial("tcp", pu.Host)
		if err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		b, _ := io.ReadAll(c)
		c.Close()
		if strings.HasPrefix(string(b), "HTTP/1.1 503") {
			return
		}
	}
	t.Fatal("a connection past MaxConns was not refused")
}

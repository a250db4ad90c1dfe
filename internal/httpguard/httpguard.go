// Package httpguard holds the checks every door of the HTTP listener makes
// before anything else (the MCP endpoint and the web dashboard alike):
// the Host and Origin of a request must name a loopback host, which is
// what a DNS-rebinding page cannot forge.
package httpguard

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// LoopbackName reports whether host (without port or brackets) is
// localhost or a loopback IP.
func LoopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" {
		return false
	}
	return ip.Unmap().IsLoopback()
}

// LoopbackHost reports whether a Host header value names a loopback
// host: localhost, 127.0.0.0/8 or ::1, bracketed or not, with or without a
// port. The port is not compared with the one served: an SSH tunnel
// (`ssh -L 9000:127.0.0.1:7330`) or a loopback reverse proxy forwards
// "localhost:9000", and the name alone is what DNS rebinding forges.
func LoopbackHost(hostport string) bool {
	host := hostport
	if h, port, err := net.SplitHostPort(hostport); err == nil {
		if strings.Trim(port, "0123456789") != "" {
			return false
		}
		host = h
	} else if len(host) > 2 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	}
	return LoopbackName(host)
}

// LoopbackRequest reports whether r names a loopback host in its Host
// header. Its target must be a path: in the absolute form
// ("GET http://127.0.0.1/ HTTP/1.1", which only proxies are sent) the
// target's host stands in for the Host header, so an empty or any other
// Host header would pass unseen.
func LoopbackRequest(r *http.Request) bool {
	if !strings.HasPrefix(r.RequestURI, "/") {
		return false
	}
	return LoopbackHost(r.Host)
}

// LoopbackOrigin reports whether an Origin header value is an http or https
// origin on a loopback host (any port). "null" and every other scheme are
// refused.
func LoopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Opaque != "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return false
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return false
	}
	return u.Host != "" && LoopbackHost(u.Host)
}

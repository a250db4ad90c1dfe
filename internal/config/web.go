package config

import (
	"net/url"
	"reflect"
	"strings"
)

// Web is the [web] table: the listener for people (docs/design/web.md),
// the dashboard on an address of its own, apart from the MCP endpoint.
type Web struct {
	// Listen (listen, default "" = off) is the host:port of the listener
	// for people; it serves the dashboard, never the MCP endpoint. Beyond
	// loopback it needs TLS (TLS "auto", or TLSCert and TLSKey).
	Listen string
	// TLS (tls) is "auto" for a self-signed certificate kept in the state
	// dir, or "" for none (or the TLSCert/TLSKey files when set).
	TLS string
	// TLSCert and TLSKey (tls_cert, tls_key: PEM files, "~" expanded) are
	// the listener's certificate and key, read again when they change.
	TLSCert, TLSKey string
	// PublicURL (public_url) is the address a phone uses: pair URLs and
	// QR codes are built on it, and its host is accepted in Host and
	// Origin beside the listener's own.
	PublicURL string
	// Tailnet (tailnet, default off) joins a tailnet as a node of its own
	// and serves the page for people there (tailnet.go).
	Tailnet *Tailnet
	// Users ([web.users]: "login" = "read,input") are the tailnet logins
	// the page lets in, each with its grant; any other login is refused.
	Users map[string][]string
}

// TLSOn reports whether the listener for people serves TLS.
func (w Web) TLSOn() bool { return w.TLS == TLSAuto || w.TLSCert != "" }

// SameListeners reports whether w and o serve people the same way: a
// change of listener, certificate, public_url or tailnet applies when the
// daemon restarts, while users (grants read at each request) apply at once.
func (w Web) SameListeners(o Web) bool {
	a, b := w, o
	a.Users, b.Users = nil, nil
	a.Tailnet, b.Tailnet = nil, nil
	if (w.Tailnet == nil) != (o.Tailnet == nil) || (w.Tailnet != nil && *w.Tailnet != *o.Tailnet) {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// TLSAuto is [web] tls = "auto": a self-signed certificate in the state dir.
const TLSAuto = "auto"

// web decodes [web].
func (d *decoder) web(v any, out *Web) {
	path := []string{"web"}
	t, ok := d.table(path, v)
	if !ok {
		return
	}
	for _, k := range sortedKeys(t) {
		kp, val := child(path, k), t[k]
		switch k {
		case "listen":
			out.Listen, _ = d.str(kp, val)
		case "tls":
			if s, ok := d.str(kp, val); ok {
				if s != TLSAuto && s != "" {
					d.add(kp, "want \"auto\" (a self-signed certificate in the state dir), or tls_cert and tls_key instead, not %q", s)
				}
				out.TLS = s
			}
		case "tls_cert":
			out.TLSCert = d.path(kp, val)
		case "tls_key":
			out.TLSKey = d.path(kp, val)
		case "public_url":
			if s, ok := d.str(kp, val); ok {
				if err := checkPublicURL(s); err != "" {
					d.add(kp, "%s", err)
				}
				out.PublicURL = strings.TrimRight(s, "/")
			}
		case "tailnet":
			out.Tailnet = d.tailnet(kp, val)
		case "users":
			out.Users = d.webUsers(kp, val)
		default:
			d.unknown(kp, val)
		}
	}
	d.webListen(path, out)
}

// webListen checks the listener for people: a host:port, and TLS beyond
// loopback (a device cookie and everything a page shows would otherwise
// cross the network in the clear).
func (d *decoder) webListen(path []string, out *Web) {
	if (out.TLSCert == "") != (out.TLSKey == "") {
		d.add(path, "tls_cert and tls_key go together")
	}
	if out.TLS == TLSAuto && out.TLSCert != "" {
		d.add(child(path, "tls"), "tls = \"auto\" and tls_cert/tls_key exclude each other: choose one")
	}
	if out.Listen == "" {
		return
	}
	d.checkListen(child(path, "listen"), out.Listen, "0.0.0.0:7443", out.TLSOn(),
		"a listener beyond loopback needs TLS: set tls = \"auto\" or tls_cert and tls_key")
}

// checkPublicURL accepts an http or https URL with a host and no more
// than a path; "" when it is good.
func checkPublicURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "not a URL: " + err.Error()
	case u.Scheme != "https" && u.Scheme != "http":
		return "want an https:// (or http://) URL such as https://box.lan:7443"
	case u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return "want scheme://host[:port][/path], without user, query or fragment"
	}
	return ""
}

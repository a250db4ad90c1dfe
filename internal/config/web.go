package config

import (
	"net/url"
	"strings"
)

// Web is the [web] table: how people reach the dashboard.
type Web struct {
	// PublicURL (public_url, default "" = the dashboard's own address on
	// the HTTP listener) is the address a phone uses: the base of the
	// links notifications carry.
	PublicURL string
}

// web decodes [web].
func (d *decoder) web(v any, w *Web) {
	p := []string{"web"}
	t, ok := d.table(p, v)
	if !ok {
		return
	}
	for _, k := range sortedKeys(t) {
		kp, val := child(p, k), t[k]
		switch k {
		case "public_url":
			if s, ok := d.str(kp, val); ok {
				if err := checkPublicURL(s); err != "" {
					d.add(kp, "%s", err)
				}
				w.PublicURL = strings.TrimRight(s, "/")
			}
		default:
			d.unknown(kp, val)
		}
	}
}

// checkPublicURL says what is wrong with a public_url, "" when nothing.
func checkPublicURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "not a URL: " + err.Error()
	case u.Scheme != "http" && u.Scheme != "https":
		return "must be an http:// or https:// URL"
	case u.Host == "":
		return "must name a host"
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return "must have no user, query or fragment"
	}
	return ""
}

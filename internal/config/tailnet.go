package config

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/endpoint"
)

// Tailnet is [web] tailnet: the daemon joins a tailnet as a node of its
// own and serves the page for people there (docs/design/web.md).
type Tailnet struct {
	// Hostname (hostname, default "harness") is the node's name on the
	// tailnet: its MagicDNS name starts with it.
	Hostname string
	// AuthKey (auth_key) is the template of the auth key that registers
	// the node, "${NAME}" from the daemon's environment: a secret, never
	// written in the file itself. Empty once the state dir holds a node
	// that is logged in.
	AuthKey string
	// State (state, "~" expanded; default STATE_DIR/tailnet) is where the
	// node keeps its keys between restarts.
	State string
	// ControlURL (control_url, default Tailscale's) is the coordination
	// server: a Headscale's, or a test's.
	ControlURL string
}

// DefaultTailnetHostname is the node's name unless hostname says.
const DefaultTailnetHostname = "harness"

// tailnetHostname is what a tailnet accepts as a node name: a DNS label.
var tailnetHostname = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$`)

// tailnet decodes [web] tailnet.
func (d *decoder) tailnet(path []string, v any) *Tailnet {
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	out := &Tailnet{Hostname: DefaultTailnetHostname}
	for _, k := range sortedKeys(t) {
		kp, val := child(path, k), t[k]
		switch k {
		case "hostname":
			if s, ok := d.str(kp, val); ok {
				if !tailnetHostname.MatchString(s) {
					d.add(kp, "want a DNS label (letters, digits and -), such as \"harness\", not %q", s)
				}
				out.Hostname = s
			}
		case "auth_key":
			if s, ok := d.str(kp, val); ok {
				// The key is a secret: it comes from the environment, so
				// the file (and anything that shows it) never holds it.
				if refs, err := endpoint.Refs(s); err != nil {
					d.add(kp, "%v", err)
				} else if s != "" && (len(refs) != 1 || s != "${"+refs[0]+"}") {
					d.add(kp, `must come from a variable of the daemon's environment: auth_key = "${TS_AUTHKEY}"`)
				}
				out.AuthKey = s
			}
		case "state":
			out.State = d.path(kp, val)
		case "control_url":
			if s, ok := d.str(kp, val); ok {
				if u, err := url.Parse(s); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
					d.add(kp, "want an http(s):// URL of a coordination server, not %q", s)
				}
				out.ControlURL = strings.TrimRight(s, "/")
			}
		default:
			d.unknown(kp, val)
		}
	}
	return out
}

// webUsers decodes [web.users]: "login@example" = "read,input".
func (d *decoder) webUsers(path []string, v any) map[string][]string {
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	out := map[string][]string{}
	for _, login := range sortedKeys(t) {
		kp := child(path, login)
		s, ok := d.str(kp, t[login])
		if !ok {
			continue
		}
		grant := SplitGrant(s)
		if len(grant) == 0 {
			d.add(kp, `want a grant such as "read,input"`)
			continue
		}
		if _, err := api.ParseGrant(grant); err != nil {
			d.add(kp, "%v", err)
			continue
		}
		out[login] = grant
	}
	return out
}

// SplitGrant splits a grant written as one string ("read, input") into
// its entries.
func SplitGrant(s string) []string {
	var out []string
	for e := range strings.SplitSeq(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

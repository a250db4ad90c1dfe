package config

import (
	"net/url"
	"strings"
)

// Host is a [host.NAME] table: another machine whose fleet the page and
// `harness top` show beside this one's, reached through the SSH bridge
// (docs/design/remote.md) with that key's grant.
type Host struct {
	// Name is the table's name: the host's label on the page and in top.
	Name string
	// SSH (ssh) is the address, ssh://[user@]host[:port].
	SSH string
	// Identity (identity, "~" expanded) is the private key ssh offers, and
	// only that one; "" leaves the choice to the user's ssh config.
	Identity string
	// Socket (socket) is the remote daemon's control socket, for a key
	// without a forced command: the remote command becomes `harness
	// --socket SOCKET bridge`. A forced command ignores it.
	Socket string
	// Notify (notify) sends the host's agents' events (a waiting prompt,
	// a failure) through this machine's [notify.*] tables.
	Notify bool
}

// LocalHost is the name reserved for this machine's own fleet.
const LocalHost = "local"

// host decodes [host.NAME].
func (d *decoder) host(name string, v any) *Host {
	p := []string{"host", name}
	t, ok := d.table(p, v)
	if !ok {
		return nil
	}
	switch {
	case name == LocalHost:
		d.add(p, "the name %q is this machine's own fleet: choose another", LocalHost)
	case !harnessNameRE.MatchString(name):
		d.add(p, `invalid host name %q: use letters, digits, "-" and "_"`, name)
	}
	h := &Host{Name: name}
	for _, k := range sortedKeys(t) {
		kp, val := child(p, k), t[k]
		switch k {
		case "ssh":
			if s, ok := d.str(kp, val); ok {
				if why := checkSSHURL(s); why != "" {
					d.add(kp, "%s", why)
				}
				h.SSH = s
			}
		case "identity":
			h.Identity = d.path(kp, val)
		case "socket":
			if s := d.path(kp, val); s != "" && !strings.HasPrefix(s, "/") {
				d.add(kp, "want an absolute path on the remote host, not %q", s)
			} else {
				h.Socket = s
			}
		case "notify":
			h.Notify = d.boolean(kp, val)
		default:
			d.unknown(kp, val)
		}
	}
	if _, set := t["ssh"]; !set {
		d.add(p, "ssh is missing: want ssh = \"ssh://user@box\"")
	}
	return h
}

// checkSSHURL accepts ssh://[user@]host[:port] and nothing more (as the
// client does); "" when it is good.
func checkSSHURL(s string) string {
	const want = " (want ssh://[user@]host[:port])"
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "not a URL: " + err.Error() + want
	case u.Scheme != "ssh":
		return "not an ssh:// address: " + s + want
	case u.Hostname() == "":
		return "no host in " + s + want
	case strings.HasPrefix(u.Hostname(), "-") || strings.HasPrefix(u.User.Username(), "-"):
		return "a host or user cannot start with -" + want
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "":
		return "a path, query or fragment is not allowed" + want
	}
	if _, set := u.User.Password(); set {
		return "a password is not allowed: use a key (identity)"
	}
	return ""
}

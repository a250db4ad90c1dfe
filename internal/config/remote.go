package config

import (
	"maps"
	"slices"

	"github.com/harness-dev/harness/internal/endpoint"
)

// Remote upstreams (docs/design/mcp.md): [mcp.KEY] url instead of cmd, with
// optional headers whose ${VAR} come from the upstream's env_file and env.
//
// When a variable is checked: env is part of the file, so a ${VAR} that
// env does not define is a load error with the header's file:line when
// the upstream has no env_file. An env_file is read at every connect (as
// it is at every spawn of a process, so a rotated token is picked up on
// the next reconnect) and never at load, because load errors are printed
// and logged and the file holds secrets; with an env_file, an unset
// ${VAR} fails that connect instead, naming the variable, and shows as
// the upstream's last error.

// Remote reports whether u is reached over Streamable HTTP (url) rather
// than spawned (cmd).
func (u *Upstream) Remote() bool { return u.URL != "" }

// remoteKey decodes the keys only a remote upstream has and reports
// whether k was one of them.
func (d *decoder) remoteKey(k string, kp []string, val any, u *Upstream) bool {
	switch k {
	case "url":
		u.URL, _ = d.str(kp, val)
	case "headers":
		u.Headers = d.headers(kp, val)
	case "auth":
		switch s, _ := d.str(kp, val); s {
		case "oauth":
			if u.OAuth == nil {
				u.OAuth = &OAuth{}
			}
		case "none":
		default:
			d.add(kp, `invalid auth %q (want "none" or "oauth")`, s)
		}
	case "client_id", "scopes":
		// Read with auth in oauthKeys, once every key is known.
	default:
		return false
	}
	return true
}

// oauthKeys reads client_id and scopes, which only mean something with
// auth = "oauth".
func (d *decoder) oauthKeys(path []string, t map[string]any, u *Upstream) {
	for _, k := range []string{"client_id", "scopes"} {
		val, ok := t[k]
		if !ok {
			continue
		}
		kp := child(path, k)
		if u.OAuth == nil {
			d.add(kp, `only with auth = "oauth"`)
			continue
		}
		if k == "client_id" {
			u.OAuth.ClientID, _ = d.str(kp, val)
		} else {
			u.OAuth.Scopes, _ = d.strs(kp, val)
		}
	}
}

// headers decodes a table of HTTP header names and value templates.
func (d *decoder) headers(path []string, v any) map[string]string {
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(t))
	for _, k := range sortedKeys(t) {
		kp := child(path, k)
		if err := endpoint.CheckHeaderName(k); err != nil {
			d.add(kp, "%v", err)
			continue
		}
		s, ok := d.str(kp, t[k])
		if !ok {
			continue
		}
		if _, err := endpoint.Refs(s); err != nil {
			d.add(kp, "%v", err)
			continue
		}
		if err := endpoint.CheckHeaderValue(s); err != nil {
			d.add(kp, "%v", err)
			continue
		}
		out[k] = s
	}
	return out
}

// upstreamTarget checks that exactly one of cmd and url is set, and that
// the keys of the other kind are not.
func (d *decoder) upstreamTarget(path []string, t map[string]any, u *Upstream) {
	_, hasCmd := t["cmd"]
	_, hasURL := t["url"]
	switch {
	case hasCmd && hasURL:
		d.add(path, "cmd and url are both set: an upstream is a process (cmd) or a remote server (url), not both")
	case hasURL:
		d.remote(path, t, u)
	case hasCmd:
		d.requireCmd(path, t, u.Cmd)
		for _, k := range []string{"headers", "auth", "client_id", "scopes"} {
			if _, ok := t[k]; ok {
				d.add(child(path, k), "only for a remote upstream (url)")
			}
		}
	default:
		d.add(path, "cmd or url is required")
	}
}

// remote checks a remote upstream's url and the variables of its headers.
func (d *decoder) remote(path []string, t map[string]any, u *Upstream) {
	for _, k := range []string{"args", "workdir"} {
		if _, ok := t[k]; ok {
			d.add(child(path, k), "only for a process upstream (cmd); this one has url")
		}
	}
	if _, ok := t["url"].(string); !ok {
		return // reported as the wrong type
	}
	d.oauthKeys(path, t, u)
	up := child(path, "url")
	parsed, err := endpoint.CheckURL(u.URL)
	if err != nil {
		d.add(up, "%v", err)
		return
	}
	if parsed.Scheme == "http" && !endpoint.IsLoopback(parsed) && (len(u.Headers) > 0 || parsed.User != nil || u.OAuth != nil) {
		d.warn(up, "plain http to %s sends the credentials unencrypted; use https", parsed.Hostname())
	}
	if u.EnvFile != "" {
		return // checked at every connect, when the file is read
	}
	for _, name := range slices.Sorted(maps.Keys(u.Headers)) {
		refs, _ := endpoint.Refs(u.Headers[name])
		for _, ref := range refs {
			if _, ok := u.Env[ref]; !ok {
				d.add(child(path, "headers", name), "${%s} is not set: define it in env or in an env_file", ref)
			}
		}
	}
}

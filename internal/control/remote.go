package control

import (
	"maps"
	"slices"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/endpoint"
)

// Remote upstreams (docs/design/mcp.md) in what control shows: the URL without
// credentials, header names without values. Their env (and env_file)
// exists only to fill the headers, so its values are secrets for every
// caller, the operator included.

// shownURL is a remote upstream's URL as mcp_status and describe show it;
// "" for a process upstream.
func shownURL(up *config.Upstream) string {
	if !up.Remote() {
		return ""
	}
	return endpoint.Redact(up.URL)
}

// remoteView fills a remote upstream's part of describe's config view.
func remoteView(up *config.Upstream, v *api.UnitConfigView) {
	if !up.Remote() {
		return
	}
	v.URL = shownURL(up)
	v.Headers = slices.Sorted(maps.Keys(up.Headers))
	v.Env = hiddenValues(v.Env)
}

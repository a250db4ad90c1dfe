package supervise

import (
	"slices"
	"strings"

	"github.com/harness-dev/harness/internal/endpoint"
	"github.com/harness-dev/harness/internal/proctree"
)

// ParseEnvFile reads an env_file (endpoint.ParseEnvFile, where the
// format is defined once for spawns, remote upstreams, notifiers and
// webhooks).
func ParseEnvFile(path string) ([]string, error) { return endpoint.ParseEnvFile(path) }

// envList is an ordered environment where a later Set replaces an earlier
// value in place.
type envList struct {
	kv  []string
	idx map[string]int
}

func (e *envList) set(kv string) {
	if e.idx == nil {
		e.idx = map[string]int{}
	}
	k, _, _ := strings.Cut(kv, "=")
	if i, ok := e.idx[k]; ok {
		e.kv[i] = kv
		return
	}
	e.idx[k] = len(e.kv)
	e.kv = append(e.kv, kv)
}

func (e *envList) has(k string) bool { _, ok := e.idx[k]; return ok }

// spawnEnv is the environment of one spawn, built in the layer order of
// docs/design/lifecycle.md.
type spawnEnv struct {
	cfg     UnitConfig
	base    []string
	marker  string
	token   string // harness only
	fileEnv []string
}

// build layers: base, env_file, Env (sorted by key), ExtraEnv, then for
// harnesses HARNESS_NAME, HARNESS_MCP_TOKEN and TERM (unless set), and the
// tree marker for every unit.
func (s spawnEnv) build() []string {
	var e envList
	for _, kv := range s.base {
		e.set(kv)
	}
	for _, kv := range s.fileEnv {
		e.set(kv)
	}
	keys := make([]string, 0, len(s.cfg.Env))
	for k := range s.cfg.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		e.set(k + "=" + s.cfg.Env[k])
	}
	for _, kv := range s.cfg.ExtraEnv {
		e.set(kv)
	}
	if s.cfg.Kind != KindUpstream {
		e.set("HARNESS_NAME=" + s.cfg.Name)
		e.set("HARNESS_MCP_TOKEN=" + s.token)
		if !e.has("TERM") {
			e.set("TERM=xterm-256color")
		}
	}
	e.set(proctree.MarkerEnv(s.marker))
	return e.kv
}

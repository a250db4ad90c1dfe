package supervise

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/harness-dev/harness/internal/endpoint"
	"github.com/harness-dev/harness/internal/proctree"
)

// ParseEnvFile reads KEY=VALUE lines from path: blank lines and lines
// starting with # are skipped, a leading "export " is allowed, and a value
// may be single-quoted (literal) or double-quoted (honouring \n, \", \\).
// An unquoted value is trimmed and ends at " #". Errors name the path and
// the line number but never a value, because the file holds secrets.
func ParseEnvFile(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		// The *PathError names the path and the cause, never content.
		return nil, fmt.Errorf("env_file: %w", err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		kv, ok, err := parseEnvLine(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("env_file %s:%d: %w", path, n, err)
		}
		if ok {
			out = append(out, kv)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("env_file %s: %w", path, err)
	}
	return out, nil
}

// parseEnvLine parses one line; ok is false for blank and comment lines.
// Errors describe the shape only, never the value.
func parseEnvLine(line string) (kv string, ok bool, err error) {
	s := strings.TrimSpace(line)
	if s == "" || strings.HasPrefix(s, "#") {
		return "", false, nil
	}
	s = strings.TrimPrefix(s, "export ")
	key, val, found := strings.Cut(s, "=")
	key = strings.TrimSpace(key)
	if !found {
		return "", false, fmt.Errorf("expected KEY=VALUE")
	}
	if !endpoint.ValidName(key) {
		return "", false, fmt.Errorf("invalid variable name")
	}
	val = strings.TrimLeft(val, " \t")
	switch {
	case strings.HasPrefix(val, "'"):
		end := strings.IndexByte(val[1:], '\'')
		if end < 0 {
			return "", false, fmt.Errorf("%s: unterminated single quote", key)
		}
		if rest := strings.TrimSpace(val[end+2:]); rest != "" && !strings.HasPrefix(rest, "#") {
			return "", false, fmt.Errorf("%s: text after closing quote", key)
		}
		val = val[1 : end+1]
	case strings.HasPrefix(val, `"`):
		v, rest, err := unquoteDouble(val[1:])
		if err != nil {
			return "", false, fmt.Errorf("%s: %w", key, err)
		}
		if rest = strings.TrimSpace(rest); rest != "" && !strings.HasPrefix(rest, "#") {
			return "", false, fmt.Errorf("%s: text after closing quote", key)
		}
		val = v
	default:
		if i := strings.Index(val, " #"); i >= 0 {
			val = val[:i]
		}
		val = strings.TrimSpace(val)
	}
	return key + "=" + val, true, nil
}

// unquoteDouble reads a double-quoted value after its opening quote and
// returns it with the rest of the line after the closing quote.
func unquoteDouble(s string) (val, rest string, err error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			return b.String(), s[i+1:], nil
		case '\\':
			if i+1 == len(s) {
				return "", "", fmt.Errorf("unterminated double quote")
			}
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case '"', '\\':
				b.WriteByte(s[i])
			default:
				// Unknown escapes stay as written, like most dotenv readers.
				b.WriteByte('\\')
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("unterminated double quote")
}

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

// spawnEnv is the environment of one spawn, built in DESIGN §5 order.
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

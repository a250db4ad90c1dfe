package endpoint

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
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
	if !ValidName(key) {
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

// Vars returns the variables a table's ${VAR} references may use: those
// of envFile (read now, so a rotated secret is picked up at next use),
// then env over them; never the daemon's own environment.
func Vars(envFile string, env map[string]string) (map[string]string, error) {
	vars := map[string]string{}
	if envFile != "" {
		kvs, err := ParseEnvFile(envFile)
		if err != nil {
			return nil, err
		}
		for _, kv := range kvs {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
		}
	}
	for k, v := range env {
		vars[k] = v
	}
	return vars, nil
}

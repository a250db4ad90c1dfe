// Package endpoint is the address and credentials of a remote upstream
// (docs/design/mcp.md: [mcp.KEY] url and headers): the ${VAR} references in header
// values and their expansion from the upstream's own variables, the checks
// a URL and a header must pass, and the form of a URL that may be shown.
//
// Header values are secrets. Nothing here ever puts a value, expanded or
// not, into an error: errors name the variable or the header instead.
package endpoint

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// UnsetError says that a header references a variable its upstream does
// not define.
type UnsetError struct {
	Name string
}

// Error implements error.
func (e *UnsetError) Error() string { return "${" + e.Name + "} is not set" }

// Refs returns the names of the variables s references, in order of first
// use, each once. "${NAME}" is a reference, "$$" a literal "$", and a "$"
// followed by anything else is itself. A "${" without its "}" or with a
// name that is not [A-Za-z_][A-Za-z0-9_]* is an error.
func Refs(s string) ([]string, error) {
	var names []string
	_, err := expand(s, func(name string) (string, bool) {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		return "", true
	})
	return names, err
}

// Expand replaces every ${NAME} in s with its value from lookup; "$$"
// becomes "$". A name lookup does not know is an *UnsetError.
func Expand(s string, lookup func(name string) (string, bool)) (string, error) {
	return expand(s, lookup)
}

func expand(s string, lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", errors.New(`"${" without its closing "}"`)
			}
			name := s[i+2 : i+2+end]
			if !ValidName(name) {
				return "", fmt.Errorf("${%s}: a variable name is letters, digits and _, not starting with a digit", name)
			}
			v, ok := lookup(name)
			if !ok {
				return "", &UnsetError{Name: name}
			}
			b.WriteString(v)
			i += 2 + end
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// ValidName reports whether k is a variable name: letters, digits and
// underscores, not starting with a digit (what an env_file and ${NAME}
// accept).
func ValidName(k string) bool {
	if k == "" || (k[0] >= '0' && k[0] <= '9') {
		return false
	}
	for _, c := range []byte(k) {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// CheckURL parses a remote upstream's url: absolute, http or https, with a
// host. Its errors never quote the URL, which may carry credentials.
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // without the URL itself
		}
		return nil, fmt.Errorf("not a valid URL: %v", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		if u.Scheme == "" {
			return nil, errors.New("want an http:// or https:// URL (no scheme given)")
		}
		return nil, fmt.Errorf("want an http:// or https:// URL, not %s://", u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return nil, errors.New("the URL has no host")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("port %.8s is not in 1..65535", p)
		}
	}
	return u, nil
}

// Hidden stands for a value that is not shown.
const Hidden = "(hidden)"

// Redact returns raw as it may be shown (mcp status, describe, logs):
// without userinfo or fragment, and with every query value replaced by
// Hidden, since either may carry a credential. A URL that does not parse
// shows as Hidden.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return Hidden
	}
	u.User = nil
	u.Fragment, u.RawFragment = "", ""
	if u.RawQuery != "" {
		q := u.Query()
		keys := make([]string, 0, len(q))
		for k := range q {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, url.QueryEscape(k)+"="+Hidden)
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	return u.String()
}

// IsLoopback reports whether u's host is localhost or a loopback address,
// where plain http sends nothing across the network.
func IsLoopback(u *url.URL) bool {
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// transportHeaders are set by the Streamable HTTP transport itself; a
// configured value would break the protocol or the session.
var transportHeaders = []string{
	"Accept", "Connection", "Content-Length", "Content-Type", "Host", "Last-Event-Id",
	"Mcp-Protocol-Version", "Mcp-Session-Id", "Transfer-Encoding",
}

// CheckHeaderName accepts an HTTP field name that the transport does not
// set itself.
func CheckHeaderName(name string) error {
	if name == "" {
		return errors.New("empty header name")
	}
	for _, c := range []byte(name) {
		if !isTokenChar(c) {
			return fmt.Errorf("header name %q: use letters, digits and !#$%%&'*+-.^_`|~", name)
		}
	}
	if slices.Contains(transportHeaders, http.CanonicalHeaderKey(name)) {
		return fmt.Errorf("header %q is set by the Streamable HTTP transport", name)
	}
	return nil
}

// CheckHeaderValue refuses what HTTP cannot carry in a field value: line
// breaks and NUL. The error names no part of the value.
func CheckHeaderValue(v string) error {
	if strings.ContainsAny(v, "\r\n\x00") {
		return errors.New("the value contains a line break or NUL")
	}
	return nil
}

func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// Target is what one connection to a remote upstream uses, resolved at
// connect time: the URL without userinfo, the headers with their
// variables expanded (and userinfo turned into basic auth), and every
// secret in them, for whoever reports errors to scrub (Scrub).
type Target struct {
	URL     string
	Header  http.Header
	Secrets []string
}

// Resolve builds the Target of rawURL with headers, expanding each value
// with lookup (the upstream's env_file and env). Userinfo in the URL
// becomes an Authorization: Basic header unless headers set one. Errors
// name the header and the variable, never a value.
func Resolve(rawURL string, headers map[string]string, lookup func(string) (string, bool)) (Target, error) {
	u, err := CheckURL(rawURL)
	if err != nil {
		return Target{}, fmt.Errorf("url: %w", err)
	}
	t := Target{Header: http.Header{}}
	names := make([]string, 0, len(headers))
	for k := range headers {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, name := range names {
		used := map[string]string{}
		v, err := Expand(headers[name], func(n string) (string, bool) {
			v, ok := lookup(n)
			if ok {
				used[n] = v
			}
			return v, ok
		})
		if err != nil {
			return Target{}, fmt.Errorf("headers.%s: %w", name, err)
		}
		if err := CheckHeaderValue(v); err != nil {
			return Target{}, fmt.Errorf("headers.%s: %w", name, err)
		}
		t.Header.Set(name, v)
		t.Secrets = append(t.Secrets, v)
		if _, cred, ok := strings.Cut(v, " "); ok {
			t.Secrets = append(t.Secrets, cred) // "Bearer X": X alone too
		}
		for _, n := range slices.Sorted(maps.Keys(used)) {
			t.Secrets = append(t.Secrets, used[n])
		}
	}
	if u.User != nil {
		pass, _ := u.User.Password()
		if t.Header.Get("Authorization") == "" {
			req := &http.Request{Header: http.Header{}}
			req.SetBasicAuth(u.User.Username(), pass)
			t.Header.Set("Authorization", req.Header.Get("Authorization"))
			t.Secrets = append(t.Secrets, t.Header.Get("Authorization"))
		}
		t.Secrets = append(t.Secrets, u.User.String())
		if pass != "" {
			t.Secrets = append(t.Secrets, pass)
		}
		u.User = nil
	}
	for _, vs := range u.Query() {
		t.Secrets = append(t.Secrets, vs...)
	}
	t.URL = u.String()
	return t, nil
}

// MinSecret is the shortest secret Scrub replaces: replacing every "1" or
// "ab" in a message would mangle it without hiding anything worth hiding.
const MinSecret = 4

// Scrub returns a function that replaces every secret of at least
// MinSecret bytes in a text with Hidden, longest first (so a header value
// goes as a whole before the variable inside it).
func Scrub(secrets []string) func(string) string {
	var keep []string
	for _, s := range secrets {
		if len(s) >= MinSecret && !slices.Contains(keep, s) {
			keep = append(keep, s)
		}
	}
	if len(keep) == 0 {
		return func(s string) string { return s }
	}
	slices.SortFunc(keep, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(keep))
	for _, s := range keep {
		pairs = append(pairs, s, Hidden)
	}
	r := strings.NewReplacer(pairs...)
	return r.Replace
}

package config

import (
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// decoder turns the generic TOML tree into typed values, recording a
// problem for every key it cannot accept. Decoding the tree by hand (rather
// than into structs) lets one pass report every bad key with its own line
// and our own wording; a key no case handles is an unknown key.
type decoder struct {
	problems
	// grants are the grants decoded so far, checked against the declared
	// upstreams once the whole file is read (checkGrants).
	grants []grantAt
	// home is $HOME for "~" expansion; resolved on first use.
	home    string
	homeErr error
	homeSet bool
	// sandboxBase is [defaults] sandbox once decoded, what each harness's
	// sandbox starts from; nil is the built-in default.
	sandboxBase *Sandbox
}

// child returns path extended by key, never sharing path's backing array.
func child(path []string, key ...string) []string {
	return append(slices.Clip(path), key...)
}

// sortedKeys returns the keys of m in byte order, so decoding is
// deterministic.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// table asserts that v is a table.
func (d *decoder) table(path []string, v any) (map[string]any, bool) {
	t, ok := v.(map[string]any)
	if !ok {
		d.add(path, "must be a table, not %s", tomlType(v))
	}
	return t, ok
}

// subtables returns the tables inside the table at path, in key order.
func (d *decoder) subtables(path []string, v any) func(yield func(string, any) bool) {
	t, ok := d.table(path, v)
	return func(yield func(string, any) bool) {
		if !ok {
			return
		}
		for _, k := range sortedKeys(t) {
			if !yield(k, t[k]) {
				return
			}
		}
	}
}

// unknown reports a key or table that the schema doesn't have.
func (d *decoder) unknown(path []string, v any) {
	if _, ok := v.(map[string]any); ok {
		d.add(path, "unknown table")
		return
	}
	d.add(path, "unknown key")
}

func (d *decoder) str(path []string, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		d.add(path, "must be a string, not %s", tomlType(v))
	}
	return s, ok
}

func (d *decoder) boolean(path []string, v any) bool {
	b, ok := v.(bool)
	if !ok {
		d.add(path, "must be true or false, not %s", tomlType(v))
	}
	return b
}

func (d *decoder) strs(path []string, v any) ([]string, bool) {
	arr, ok := v.([]any)
	if !ok {
		d.add(path, "must be an array of strings, not %s", tomlType(v))
		return nil, false
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			d.add(path, "element %d must be a string, not %s", i, tomlType(e))
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// maxSeconds keeps a duration in seconds inside time.Duration (~292 years).
const maxSeconds = math.MaxInt64 / int64(time.Second)

// seconds decodes a non-negative number of seconds, integer or float.
func (d *decoder) seconds(path []string, v any, def time.Duration) time.Duration {
	switch n := v.(type) {
	case int64:
		if n < 0 {
			d.add(path, "must be >= 0 seconds, not %d", n)
			return def
		}
		if n > maxSeconds {
			d.add(path, "%d seconds is too long", n)
			return def
		}
		return time.Duration(n) * time.Second
	case float64:
		if math.IsNaN(n) || n < 0 {
			d.add(path, "must be >= 0 seconds, not %v", n)
			return def
		}
		if n > float64(maxSeconds) {
			d.add(path, "%v seconds is too long", n)
			return def
		}
		return time.Duration(n * float64(time.Second))
	}
	d.add(path, "must be a number of seconds, not %s", tomlType(v))
	return def
}

// env decodes a table of environment variables.
func (d *decoder) env(path []string, v any) map[string]string {
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(t))
	for _, k := range sortedKeys(t) {
		kp := child(path, k)
		if k == "" || strings.ContainsAny(k, "=\x00") {
			d.add(kp, "invalid environment variable name")
			continue
		}
		if s, ok := d.str(kp, t[k]); ok {
			out[k] = s
		}
	}
	return out
}

// path decodes a file path, expanding a leading "~" to $HOME.
func (d *decoder) path(path []string, v any) string {
	s, ok := d.str(path, v)
	if !ok || (s != "~" && !strings.HasPrefix(s, "~/")) {
		return s
	}
	if !d.homeSet {
		d.home, d.homeErr = os.UserHomeDir()
		d.homeSet = true
	}
	if d.homeErr != nil {
		d.add(path, "cannot expand ~: %v", d.homeErr)
		return s
	}
	return filepath.Join(d.home, s[1:])
}

// paths decodes a list of file paths, each "~" expanded.
func (d *decoder) paths(path []string, v any) []string {
	list, ok := d.strs(path, v)
	if !ok {
		return nil
	}
	for i, s := range list {
		list[i] = d.path(path, s)
	}
	return list
}

// tomlType names the TOML type of a decoded value for messages.
func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case map[string]any:
		return "a table"
	case []map[string]any:
		return "an array of tables"
	case []any:
		return "an array"
	case time.Time:
		return "a datetime"
	}
	return fmt.Sprintf("%T", v)
}

// daemon decodes [daemon].
func (d *decoder) daemon(v any, out *Daemon) {
	path := []string{"daemon"}
	t, ok := d.table(path, v)
	if !ok {
		return
	}
	for _, k := range sortedKeys(t) {
		kp, val := child(path, k), t[k]
		switch k {
		case "watch_config":
			out.WatchConfig = d.boolean(kp, val)
		case "mcp_http":
			if s, ok := d.str(kp, val); ok {
				if err := checkLoopback(s); err != nil {
					d.add(kp, "%v", err)
				}
				out.MCPHTTP = s
			}
		case "mcp_http_operator_allow":
			out.MCPHTTPOperatorAllow = d.grant(kp, val)
		case "mcp_http_operator_tools":
			out.MCPHTTPOperatorTools = d.toolMode(kp, val)
		case "mcp_max_message_bytes":
			if n := d.byteCount(kp, val, MinMCPMaxMessage, MaxMCPMaxMessage); n != 0 {
				out.MCPMaxMessage = n
			}
		case "call_log_args":
			out.CallLogArgs = d.boolean(kp, val)
		case "webhook_listen":
			out.WebhookListen, _ = d.str(kp, val)
		case "webhook_tls_cert":
			out.WebhookTLSCert = d.path(kp, val)
		case "webhook_tls_key":
			out.WebhookTLSKey = d.path(kp, val)
		case "max_concurrent_agents":
			out.MaxConcurrentAgents = d.count(kp, val, 1, 10000)
		default:
			d.unknown(kp, val)
		}
	}
	d.webhookListen(path, out)
}

// webhookListen checks [daemon] webhook_listen: a host:port, loopback
// unless the listener has a certificate and key (it would otherwise take
// secrets and payloads in the clear from the network).
func (d *decoder) webhookListen(path []string, out *Daemon) {
	if (out.WebhookTLSCert == "") != (out.WebhookTLSKey == "") {
		d.add(path, "webhook_tls_cert and webhook_tls_key go together")
	}
	if out.WebhookListen == "" {
		return
	}
	d.checkListen(child(path, "webhook_listen"), out.WebhookListen, "127.0.0.1:7331", out.WebhookTLSCert != "",
		"a webhook listener beyond loopback needs webhook_tls_cert and webhook_tls_key")
}

// checkListen checks a listener's host:port (example shows one) and that
// beyond loopback it has TLS, saying how to give it some (needTLS): a
// listener in the clear would carry its secrets across the network.
func (d *decoder) checkListen(kp []string, addr, example string, hasTLS bool, needTLS string) {
	if _, port, err := net.SplitHostPort(addr); err != nil {
		d.add(kp, "want host:port such as %s: %v", example, err)
		return
	} else if n, ok := parsePort(port); !ok || n > 65535 {
		d.add(kp, "invalid port %q", port)
		return
	}
	if err := checkLoopback(addr); err != nil && !hasTLS {
		d.add(kp, "%v; %s", err, needTLS)
	}
}

// checkLoopback accepts host:port where host is localhost or a loopback
// address; anything else would expose the MCP endpoint beyond this machine.
func checkLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want a loopback host:port such as 127.0.0.1:7330: %w", err)
	}
	if n, ok := parsePort(port); !ok || n > 65535 {
		return fmt.Errorf("invalid port %q in %q", port, addr)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("host %q is not loopback (want 127.0.0.0/8, ::1 or localhost)", host)
}

func parsePort(s string) (int, bool) {
	if s == "" || len(s) > 5 {
		return 0, false
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// schedule validates a cron expression with the parser the scheduler uses.
func checkSchedule(s string) error {
	if strings.TrimSpace(s) == "" {
		return fmt.Errorf("must not be empty (omit it for no schedule)")
	}
	if _, err := cron.ParseStandard(s); err != nil {
		return fmt.Errorf("invalid schedule %q: %w", s, err)
	}
	// cron rounds "@every" below a second up to one second; an operator who
	// wrote "@every 0s" or a negative interval made a mistake.
	if rest, ok := strings.CutPrefix(s, "@every "); ok {
		if dur, err := time.ParseDuration(rest); err == nil && dur < time.Second {
			return fmt.Errorf("invalid schedule %q: @every needs at least 1s", s)
		}
	}
	return nil
}

// byteCount decodes a number of bytes in min..max; 0 (reported) when it
// is not one.
func (d *decoder) byteCount(kp []string, val any, min, max int) int {
	n, ok := val.(int64)
	switch {
	case !ok:
		d.add(kp, "must be a number of bytes, not %s", tomlType(val))
	case n < int64(min) || n > int64(max):
		d.add(kp, "%d bytes is out of range (want %d..%d)", n, min, max)
	default:
		return int(n)
	}
	return 0
}

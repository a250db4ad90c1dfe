package endpoint

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func vars(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestExpand(t *testing.T) {
	env := vars(map[string]string{"TOKEN": "t0k", "A": "x", "EMPTY": ""})
	for in, want := range map[string]string{
		"Bearer ${TOKEN}":   "Bearer t0k",
		"${A}${A}-${EMPTY}": "xx-",
		"cost $5, $$ and $": "cost $5, $ and $",
		"$${TOKEN}":         "${TOKEN}",
		"no refs":           "no refs",
	} {
		got, err := Expand(in, env)
		if err != nil || got != want {
			t.Errorf("Expand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, err := Expand("Bearer ${MISSING}", env)
	var unset *UnsetError
	if !errors.As(err, &unset) || unset.Name != "MISSING" || err.Error() != "${MISSING} is not set" {
		t.Errorf("unset: %v", err)
	}
	for _, bad := range []string{"${TOKEN", "${1X}", "${}", "${A-B}"} {
		if _, err := Expand(bad, env); err == nil {
			t.Errorf("Expand(%q) accepted", bad)
		}
	}
}

func TestRefs(t *testing.T) {
	got, err := Refs("${B} ${A} $$ ${B}")
	if err != nil || !slices.Equal(got, []string{"B", "A"}) {
		t.Fatalf("Refs = %v, %v", got, err)
	}
}

func TestCheckURL(t *testing.T) {
	for _, ok := range []string{"https://mcp.example.com/mcp", "http://127.0.0.1:8080/mcp", "https://u:p@h/x?k=v"} {
		if _, err := CheckURL(ok); err != nil {
			t.Errorf("CheckURL(%q): %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"ftp://host/mcp":           "not ftp://",
		"host/mcp":                 "no scheme",
		"https:///mcp":             "no host",
		"https://sec%zzret@h/":     "not a valid URL",
		"file:///etc/passwd":       "not file://",
		"ws://127.0.0.1:1/mcp":     "not ws://",
		"https://user:s3cr3t@:80/": "no host",
	} {
		_, err := CheckURL(bad)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckURL(%q) = %v, want %q", bad, err, want)
			continue
		}
		if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "sec%zzret") {
			t.Errorf("CheckURL(%q) error quotes the URL: %v", bad, err)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pw@host:8443/mcp?token=abc&x=1#frag": "https://host:8443/mcp?token=(hidden)&x=(hidden)",
		"http://127.0.0.1:9/mcp":                           "http://127.0.0.1:9/mcp",
		"://bad":                                           Hidden,
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckHeader(t *testing.T) {
	for _, ok := range []string{"Authorization", "X-Api-Key", "x_custom"} {
		if err := CheckHeaderName(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Bad Name", "mcp-session-id", "Content-Type", "a:b"} {
		if err := CheckHeaderName(bad); err == nil {
			t.Errorf("header name %q accepted", bad)
		}
	}
	if err := CheckHeaderValue("a\r\nInjected: 1"); err == nil || strings.Contains(err.Error(), "Injected") {
		t.Errorf("CR LF value: %v", err)
	}
}

func TestResolve(t *testing.T) {
	env := vars(map[string]string{"TOKEN": "tok-123456", "ORG": "acme"})
	tg, err := Resolve("https://bob:pw-98765@mcp.example.com/mcp?key=q-secret",
		map[string]string{"X-Org": "${ORG}", "Authorization": "Bearer ${TOKEN}"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if tg.URL != "https://mcp.example.com/mcp?key=q-secret" {
		t.Errorf("URL %q keeps userinfo or lost the query", tg.URL)
	}
	if tg.Header.Get("Authorization") != "Bearer tok-123456" || tg.Header.Get("X-Org") != "acme" {
		t.Errorf("header %v", tg.Header)
	}
	for _, s := range []string{"Bearer tok-123456", "tok-123456", "acme", "pw-98765", "q-secret"} {
		if !slices.Contains(tg.Secrets, s) {
			t.Errorf("secrets lack %q: %q", s, tg.Secrets)
		}
	}
	// Userinfo becomes basic auth when no Authorization header is set.
	tg, err = Resolve("https://bob:pw-98765@h/mcp", nil, env)
	if err != nil || !strings.HasPrefix(tg.Header.Get("Authorization"), "Basic ") || tg.URL != "https://h/mcp" {
		t.Errorf("basic: %+v %v", tg, err)
	}
	_, err = Resolve("https://h/mcp", map[string]string{"Authorization": "Bearer ${NOPE}"}, env)
	if err == nil || err.Error() != "headers.Authorization: ${NOPE} is not set" {
		t.Errorf("unset: %v", err)
	}
	bad := vars(map[string]string{"TOKEN": "line\nbreak-secret"})
	_, err = Resolve("https://h/mcp", map[string]string{"Authorization": "Bearer ${TOKEN}"}, bad)
	if err == nil || strings.Contains(err.Error(), "break-secret") {
		t.Errorf("line break: %v", err)
	}
}

func TestScrub(t *testing.T) {
	s := Scrub([]string{"tok-123456", "Bearer tok-123456", "ab", ""})
	got := s(`POST failed: "Bearer tok-123456" then tok-123456; ab stays`)
	if got != `POST failed: "(hidden)" then (hidden); ab stays` {
		t.Errorf("scrubbed %q", got)
	}
	if Scrub(nil)("as is") != "as is" {
		t.Error("no secrets changed the text")
	}
}

package config

import (
	"strings"
	"testing"
)

// TestScenario_PeopleListenerBeyondLoopbackNeedsTLS: a [web] listen on a
// network address without TLS is refused with file:line and what to set;
// with tls = "auto" or a certificate it loads.
func TestScenario_PeopleListenerBeyondLoopbackNeedsTLS(t *testing.T) {
	for _, tt := range []struct {
		name, src, want string
	}{
		{"no tls", "[web]\nlisten = '0.0.0.0:7443'\n", `harness.toml:2: web.listen: host "0.0.0.0" is not loopback (want 127.0.0.0/8, ::1 or localhost); a listener beyond loopback needs TLS: set tls = "auto" or tls_cert and tls_key`},
		{"bad tls", "[web]\nlisten = '127.0.0.1:7443'\ntls = 'yes'\n", `harness.toml:3: web.tls: want "auto"`},
		{"cert without key", "[web]\nlisten = '0.0.0.0:7443'\ntls_cert = '/c.pem'\n", "tls_cert and tls_key go together"},
		{"auto and files", "[web]\nlisten = '0.0.0.0:7443'\ntls = 'auto'\ntls_cert = '/c.pem'\ntls_key = '/k.pem'\n", "exclude each other"},
		{"bad port", "[web]\nlisten = '0.0.0.0:99999'\ntls = 'auto'\n", `web.listen: invalid port "99999"`},
		{"public_url scheme", "[web]\npublic_url = 'ftp://box'\n", "harness.toml:2: web.public_url: want an https://"},
		{"unknown key", "[web]\nlisten_on = 'x'\n", "web.listen_on: unknown key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("harness.toml", []byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
	for _, src := range []string{
		"[web]\nlisten = '0.0.0.0:7443'\ntls = 'auto'\npublic_url = 'https://box.lan:7443/'\n",
		"[web]\nlisten = '[::]:7443'\ntls_cert = '/c.pem'\ntls_key = '/k.pem'\n",
		"[web]\nlisten = '127.0.0.1:7443'\n",
	} {
		cfg, err := Parse("harness.toml", []byte(src))
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if cfg.Web.Listen == "" {
			t.Fatalf("%q: listen not kept", src)
		}
		if strings.Contains(src, "public_url") && cfg.Web.PublicURL != "https://box.lan:7443" {
			t.Fatalf("public_url %q", cfg.Web.PublicURL)
		}
	}
}

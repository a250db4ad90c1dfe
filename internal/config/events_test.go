package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseNotifyAndWebhook(t *testing.T) {
	src := `
[daemon]
webhook_listen = "127.0.0.1:0"

[harness.review]
cmd = "claude"
restart = "no"

[notify.phone]
url = "https://ntfy.example/alerts"
format = "ntfy"
headers = { Authorization = "Bearer ${NTFY}" }
env = { NTFY = "tok" }
on = ["waiting", "failed"]
harnesses = ["rev*", "proj/*"]
cooldown_s = 5

[notify.script]
command = ["/usr/local/bin/page", "--now"]
timeout_s = 2

[webhook.gh]
path = "/hooks/github"
verify = "github"
secret = "${GH_SECRET}"
env_file = "/etc/harness/gh.env"
events = ["pull_request.opened"]
harnesses = ["review"]
`
	cfg, err := Parse("harness.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	n := cfg.Notifiers["phone"]
	if n.URL != "https://ntfy.example/alerts" || n.Format != FormatNtfy || n.Cooldown != 5*time.Second ||
		!slices.Equal(n.On, []string{"waiting", "failed"}) || n.Timeout != DefaultNotifyTimeout {
		t.Errorf("phone: %+v", n)
	}
	if !n.Wants("waiting", "review") || !n.Wants("failed", "proj/x") || n.Wants("failed", "other") || n.Wants("limited", "review") {
		t.Error("phone: Wants")
	}
	s := cfg.Notifiers["script"]
	if !slices.Equal(s.Command, []string{"/usr/local/bin/page", "--now"}) || s.Timeout != 2*time.Second ||
		!slices.Equal(s.On, DefaultNotifyOn) || s.Cooldown != DefaultNotifyCooldown || !s.Wants("job_failed", "anything") {
		t.Errorf("script: %+v", s)
	}
	w := cfg.Webhooks["gh"]
	if w.Path != "/hooks/github" || w.Verify != VerifyGitHub || w.MaxBody != DefaultWebhookMaxBody ||
		w.RateLimit != DefaultWebhookRateLimit || !slices.Equal(w.Harnesses, []string{"review"}) ||
		w.SecretAt != "harness.toml:25: webhook.gh.secret" {
		t.Errorf("gh: %+v", w)
	}
	if cfg.Daemon.WebhookListen != "127.0.0.1:0" {
		t.Errorf("webhook_listen %q", cfg.Daemon.WebhookListen)
	}
}

// TestScenario_EventsConfigErrors: every mistake in [notify.*],
// [webhook.*] and webhook_listen names its file:line and key, and never a
// secret's value.
func TestScenario_EventsConfigErrors(t *testing.T) {
	const job = "[harness.j]\ncmd = 'x'\nrestart = 'no'\n[harness.svc]\ncmd = 'x'\n"
	for _, tt := range []struct {
		name, src, want string
	}{
		{"no sink", "[notify.a]\non = ['failed']\n", "harness.toml:1: notify.a: command or url is required"},
		{"two sinks", "[notify.a]\ncommand = ['x']\nurl = 'https://h/'\n", "notify.a: command and url are both set"},
		{"bad event", "[notify.a]\ncommand = ['x']\non = ['exploded']\n", "harness.toml:3: notify.a.on: unknown event \"exploded\""},
		{"bad format", "[notify.a]\nurl = 'https://h/'\nformat = 'teams'\n", "notify.a.format: unknown format \"teams\""},
		{"format with command", "[notify.a]\ncommand = ['x']\nformat = 'slack'\n", "notify.a.format: only with url"},
		{"empty command", "[notify.a]\ncommand = []\n", "notify.a.command: must name a program"},
		{"unset var", "[notify.a]\nurl = 'https://h/'\nheaders = { X-Key = 'hunter2-${K}' }\n", "harness.toml:3: notify.a.headers.X-Key: ${K} is not set"},
		{"zero timeout", "[notify.a]\ncommand = ['x']\ntimeout_s = 0\n", "notify.a.timeout_s: must be more than 0"},
		{"bad glob", "[notify.a]\ncommand = ['x']\nharnesses = ['[']\n", "notify.a.harnesses: invalid glob"},
		{"unknown key", "[notify.a]\ncommand = ['x']\nretries = 3\n", "notify.a.retries: unknown key"},
		{"action_ttl not a duration", "[notify.a]\ncommand = ['x']\naction_ttl = 'soon'\n", "notify.a.action_ttl: must be a duration"},
		{"action_ttl too long", "[notify.a]\ncommand = ['x']\naction_ttl = '72h'\n", "notify.a.action_ttl: must be a duration from \"1m\" to \"24h\""},
		{"public_url not http", "[web]\npublic_url = 'ftp://box'\n", "web.public_url: want an https:// (or http://) URL"},
		{"public_url with a query", "[web]\npublic_url = 'https://box/?a=1'\n", "web.public_url: want scheme://host[:port][/path], without user, query or fragment"},
		{"webhook missing keys", job + "[webhook.w]\npath = '/w'\n", "webhook.w: verify is required"},
		{"webhook literal secret", job + "[webhook.w]\npath = '/w'\nverify = 'bearer'\nsecret = 'hunter2'\nharnesses = ['j']\n", "webhook.w.secret: must come from a variable"},
		{"webhook bad verify", job + "[webhook.w]\npath = '/w'\nverify = 'hmac'\nsecret = '${S}'\nenv = {S='x'}\nharnesses = ['j']\n", "webhook.w.verify: unknown verify \"hmac\""},
		{"webhook not a job", job + "[webhook.w]\npath = '/w'\nverify = 'bearer'\nsecret = '${S}'\nenv = {S='x'}\nharnesses = ['svc']\n", "webhook.w.harnesses: svc is not a job"},
		{"webhook unknown harness", job + "[webhook.w]\npath = '/w'\nverify = 'bearer'\nsecret = '${S}'\nenv = {S='x'}\nharnesses = ['nope']\n", "webhook.w.harnesses: unknown harness \"nope\""},
		{"webhook dup path", job + "[webhook.a]\npath = '/w'\nverify = 'bearer'\nsecret = '${S}'\nenv = {S='x'}\nharnesses = ['j']\n[webhook.b]\npath = '/w'\nverify = 'bearer'\nsecret = '${S}'\nenv = {S='x'}\nharnesses = ['j']\n", "webhook.b.path: /w is also the path of webhook.a"},
		{"webhook bad path", job + "[webhook.w]\npath = 'w/../x'\nverify = 'bearer'\nsecret = '${S}'\nenv = {S='x'}\nharnesses = ['j']\n", "webhook.w.path: must be a clean absolute URL path"},
		{"webhook unset secret var", job + "[webhook.w]\npath = '/w'\nverify = 'bearer'\nsecret = '${S}'\nharnesses = ['j']\n", "webhook.w.secret: ${S} is not set"},
		{"webhook empty secret", job + "[webhook.w]\npath = '/w'\nverify = 'github'\nsecret = '${S}'\nenv = {S=''}\nharnesses = ['j']\n", "harness.toml:9: webhook.w.secret: resolves to an empty string"},
		{"webhook empty secret beside env_file", job + "[webhook.w]\npath = '/w'\nverify = 'standard'\nsecret = '${S}${T}'\nenv_file = '/e.env'\nenv = {S='', T=''}\nharnesses = ['j']\n", "harness.toml:9: webhook.w.secret: resolves to an empty string"},
		{"listen beyond loopback", "[daemon]\nwebhook_listen = '0.0.0.0:8443'\n", "daemon.webhook_listen: host \"0.0.0.0\" is not loopback"},
		{"cert without key", "[daemon]\nwebhook_listen = '0.0.0.0:8443'\nwebhook_tls_cert = '/c.pem'\n", "webhook_tls_cert and webhook_tls_key go together"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("harness.toml", []byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error shows a secret: %v", err)
			}
		})
	}
	cfg, err := Parse("harness.toml", []byte("[web]\npublic_url = 'https://box.example:7443/'\n[notify.a]\ncommand = ['x']\naction_links = true\n[notify.b]\ncommand = ['x']\naction_ttl = '5m'\n"))
	if err != nil || cfg.Web.PublicURL != "https://box.example:7443" || !cfg.Notifiers["a"].ActionLinks ||
		cfg.Notifiers["a"].ActionTTL != DefaultActionTTL || cfg.Notifiers["b"].ActionTTL != 5*time.Minute || cfg.Notifiers["b"].ActionLinks {
		t.Errorf("action links and public_url: %+v %v", cfg, err)
	}
	// A listener beyond loopback with a certificate is accepted.
	if _, err := Parse("harness.toml", []byte("[daemon]\nwebhook_listen = '0.0.0.0:8443'\nwebhook_tls_cert = '/c.pem'\nwebhook_tls_key = '/k.pem'\n")); err != nil {
		t.Errorf("tls listener: %v", err)
	}
}

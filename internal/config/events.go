package config

import (
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/endpoint"
)

// Events out and in (docs/design/events.md): [notify.NAME] tables send a message when
// something needs a person, [webhook.NAME] tables start jobs from
// deliveries on [daemon] webhook_listen. Both are global-file only. Like a
// remote upstream's headers, their ${VAR} come from the table's env_file
// (read at every use, never at load) and env; without an env_file, an
// unknown ${VAR} is a load error.

// Notify events, the values `on` accepts.
const (
	NotifyWaiting   = "waiting"
	NotifyLimited   = "limited"
	NotifyFailed    = "failed"
	NotifyDegraded  = "degraded"
	NotifyRecovered = "recovered"
	NotifyJobFailed = "job_failed"
	NotifyHeld      = "held"
	// NotifyTurnDone: an agent with a worktree finished a turn; the
	// message carries the diff stat and links to the Changes view.
	NotifyTurnDone = "turn_done"
	// NotifyToolChanged: an upstream's tool changed since it was pinned
	// and is held back until approved (docs/gateway.md).
	NotifyToolChanged = "tool_changed"
	// NotifySandboxDenied: a sandboxed harness was refused a host or a file.
	NotifySandboxDenied = "sandbox_denied"
)

// NotifyEvents are the events a [notify.NAME] `on` may name.
var NotifyEvents = []string{NotifyWaiting, NotifyLimited, NotifyFailed, NotifyDegraded, NotifyRecovered, NotifyJobFailed, NotifyHeld, NotifyTurnDone, NotifyToolChanged, NotifySandboxDenied}

// DefaultNotifyOn is `on` when absent.
var DefaultNotifyOn = []string{NotifyWaiting, NotifyLimited, NotifyFailed, NotifyJobFailed}

// Notify sink formats (format, with url).
const (
	FormatJSON    = "json"
	FormatSlack   = "slack"
	FormatDiscord = "discord"
	FormatNtfy    = "ntfy"
)

// Defaults of [notify.NAME].
const (
	DefaultNotifyCooldown = 60 * time.Second
	DefaultNotifyTimeout  = 10 * time.Second
	MaxNotifyTimeout      = 5 * time.Minute
)

// Notify is one [notify.NAME] table. Exactly one of Command and URL is set.
type Notify struct {
	Name string
	// On (on) are the events that send, from NotifyEvents.
	On []string
	// Harnesses (harnesses) are path.Match globs over harness names
	// ("proj/*" for a project's); empty means every harness.
	Harnesses []string
	// Cooldown (cooldown_s) is the least time between two messages of
	// this table for the same harness and event (and, for waiting, the
	// same prompt).
	Cooldown time.Duration
	// Command (command) is an argv run without a shell, the message as
	// JSON on its stdin, with the env_file and env in its environment.
	Command []string
	// Timeout (timeout_s) bounds one command run or one HTTP request.
	Timeout time.Duration
	// URL (url), Format (format, default json) and Headers (headers,
	// values are secrets with ${VAR} from EnvFile and Env).
	URL     string
	Format  string
	Headers map[string]string
	EnvFile string
	Env     map[string]string
	// ActionLinks (action_links, default false) puts one link per choice
	// in a waiting message, each answering the prompt with that choice
	// once, for ActionTTL (action_ttl, a duration, default
	// DefaultActionTTL).
	ActionLinks bool
	ActionTTL   time.Duration
}

// DefaultActionTTL is how long an action link stays usable unless
// action_ttl says.
const DefaultActionTTL = 15 * time.Minute

// MaxActionTTL bounds action_ttl: a link is a permission in a message.
const MaxActionTTL = 24 * time.Hour

// Wants reports whether n sends event for harness.
func (n *Notify) Wants(event, harness string) bool {
	if !slices.Contains(n.On, event) {
		return false
	}
	return MatchAny(n.Harnesses, harness)
}

// MatchAny reports whether name matches one of globs (path.Match); no
// globs match everything.
func MatchAny(globs []string, name string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// Webhook verification schemes (verify).
const (
	VerifyGitHub   = "github"
	VerifyGitLab   = "gitlab"
	VerifyGitea    = "gitea"
	VerifyStandard = "standard"
	VerifyBearer   = "bearer"
)

// Defaults and bounds of [webhook.NAME].
const (
	DefaultWebhookMaxBody   = 1 << 20
	MaxWebhookMaxBody       = 25 << 20
	DefaultWebhookRateLimit = 60
)

// Webhook is one [webhook.NAME] table: a route on the webhook listener.
type Webhook struct {
	Name string
	// Path (path) is the URL path it answers, unique among the tables.
	Path string
	// Verify (verify) is how a delivery proves its sender; Secret
	// (secret) the template of the shared secret, ${VAR} from EnvFile
	// and Env.
	Verify  string
	Secret  string
	EnvFile string
	Env     map[string]string
	// SecretAt is where secret is set ("harness.toml:14:
	// webhook.NAME.secret"): an env_file is read at use, so a secret
	// that resolves to "" there is reported against this line.
	SecretAt string
	// Events (events) filters deliveries by event name, or
	// "EVENT.ACTION"; empty takes every event.
	Events []string
	// Harnesses (harnesses) are the jobs a delivery triggers.
	Harnesses []string
	// MaxBody (max_body_bytes) bounds a delivery's body (413 past it).
	MaxBody int64
	// RateLimit (rate_limit) is the deliveries per minute the route
	// accepts (429 past it).
	RateLimit int
}

var webhookVerifies = []string{VerifyGitHub, VerifyGitLab, VerifyGitea, VerifyStandard, VerifyBearer}

// notify decodes [notify.NAME].
func (d *decoder) notify(name string, v any) *Notify {
	p := []string{"notify", name}
	t, ok := d.table(p, v)
	if !ok {
		return nil
	}
	if !harnessNameRE.MatchString(name) {
		d.add(p, `invalid notify name %q: use letters, digits, "-" and "_"`, name)
	}
	n := &Notify{Name: name, On: slices.Clone(DefaultNotifyOn), Cooldown: DefaultNotifyCooldown,
		Timeout: DefaultNotifyTimeout, Format: FormatJSON, ActionTTL: DefaultActionTTL}
	for _, k := range sortedKeys(t) {
		kp, val := child(p, k), t[k]
		switch k {
		case "on":
			if on, ok := d.strs(kp, val); ok {
				for _, e := range on {
					if !slices.Contains(NotifyEvents, e) {
						d.add(kp, "unknown event %q (want one of %s)", e, strings.Join(NotifyEvents, ", "))
					}
				}
				n.On = on
			}
		case "harnesses":
			n.Harnesses = d.globs(kp, val)
		case "cooldown_s":
			n.Cooldown = d.seconds(kp, val, DefaultNotifyCooldown)
		case "timeout_s":
			n.Timeout = d.seconds(kp, val, DefaultNotifyTimeout)
			if n.Timeout <= 0 || n.Timeout > MaxNotifyTimeout {
				d.add(kp, "must be more than 0 and at most %d seconds", int(MaxNotifyTimeout/time.Second))
			}
		case "command":
			if argv, ok := d.strs(kp, val); ok {
				if len(argv) == 0 || strings.TrimSpace(argv[0]) == "" {
					d.add(kp, "must name a program: command = [\"prog\", \"arg\"]")
				}
				n.Command = argv
			}
		case "url":
			if s, ok := d.str(kp, val); ok {
				n.URL = s
				if _, err := endpoint.CheckURL(s); err != nil {
					d.add(kp, "%v", err)
				}
			}
		case "format":
			if s, ok := d.str(kp, val); ok {
				switch s {
				case FormatJSON, FormatSlack, FormatDiscord, FormatNtfy:
					n.Format = s
				default:
					d.add(kp, `unknown format %q (want "json", "slack", "discord" or "ntfy")`, s)
				}
			}
		case "headers":
			n.Headers = d.headers(kp, val)
		case "env_file":
			n.EnvFile = d.path(kp, val)
		case "env":
			n.Env = d.env(kp, val)
		case "action_links":
			n.ActionLinks = d.boolean(kp, val)
		case "action_ttl":
			if s, ok := d.str(kp, val); ok {
				ttl, err := time.ParseDuration(s)
				if err != nil || ttl < time.Minute || ttl > MaxActionTTL {
					d.add(kp, `must be a duration from "1m" to "24h", such as "15m"`)
					break
				}
				n.ActionTTL = ttl
			}
		default:
			d.unknown(kp, val)
		}
	}
	_, hasCmd := t["command"]
	_, hasURL := t["url"]
	switch {
	case hasCmd && hasURL:
		d.add(p, "command and url are both set: a notifier has one sink")
	case !hasCmd && !hasURL:
		d.add(p, "command or url is required")
	case hasCmd:
		for _, k := range []string{"format", "headers"} {
			if _, ok := t[k]; ok {
				d.add(child(p, k), "only with url")
			}
		}
	}
	d.checkRefs(p, n.EnvFile, n.Env, n.Headers)
	return n
}

// webhook decodes [webhook.NAME]; harnesses are checked against the
// file's jobs by checkWebhooks once every table is read.
func (d *decoder) webhook(name string, v any) *Webhook {
	p := []string{"webhook", name}
	t, ok := d.table(p, v)
	if !ok {
		return nil
	}
	if !harnessNameRE.MatchString(name) {
		d.add(p, `invalid webhook name %q: use letters, digits, "-" and "_"`, name)
	}
	w := &Webhook{Name: name, MaxBody: DefaultWebhookMaxBody, RateLimit: DefaultWebhookRateLimit}
	for _, k := range sortedKeys(t) {
		kp, val := child(p, k), t[k]
		switch k {
		case "path":
			if s, ok := d.str(kp, val); ok {
				if !strings.HasPrefix(s, "/") || strings.ContainsAny(s, "?# \t") || path.Clean(s) != s {
					d.add(kp, "must be a clean absolute URL path such as /hooks/github, not %q", s)
				}
				w.Path = s
			}
		case "verify":
			if s, ok := d.str(kp, val); ok {
				if !slices.Contains(webhookVerifies, s) {
					d.add(kp, `unknown verify %q (want "github", "gitlab", "gitea", "standard" or "bearer")`, s)
				}
				w.Verify = s
			}
		case "secret":
			if s, ok := d.str(kp, val); ok {
				if refs, err := endpoint.Refs(s); err != nil {
					d.add(kp, "%v", err)
				} else if len(refs) == 0 {
					d.add(kp, `must come from a variable: secret = "${NAME}" with NAME in env_file or env`)
				}
				w.Secret = s
			}
			w.SecretAt = d.at(kp)
		case "env_file":
			w.EnvFile = d.path(kp, val)
		case "env":
			w.Env = d.env(kp, val)
		case "events":
			w.Events, _ = d.strs(kp, val)
		case "harnesses":
			w.Harnesses, _ = d.strs(kp, val)
		case "max_body_bytes":
			n, ok := val.(int64)
			if !ok || n < 1 || n > MaxWebhookMaxBody {
				d.add(kp, "must be a number of bytes from 1 to %d", MaxWebhookMaxBody)
				continue
			}
			w.MaxBody = n
		case "rate_limit":
			n, ok := val.(int64)
			if !ok || n < 1 || n > 100000 {
				d.add(kp, "must be deliveries per minute, from 1 to 100000")
				continue
			}
			w.RateLimit = int(n)
		default:
			d.unknown(kp, val)
		}
	}
	for _, k := range []string{"path", "verify", "secret", "harnesses"} {
		if _, ok := t[k]; !ok {
			d.add(p, "%s is required", k)
		}
	}
	d.checkRefs(p, w.EnvFile, w.Env, map[string]string{"secret": w.Secret})
	d.checkSecretNotEmpty(child(p, "secret"), w)
	return w
}

// checkSecretNotEmpty: a secret that env alone resolves to "" would make
// an HMAC with an empty key, which anyone can compute. One that needs the
// env_file is checked when the file is read, at every delivery.
func (d *decoder) checkSecretNotEmpty(kp []string, w *Webhook) {
	if w.Secret == "" {
		return
	}
	v, err := endpoint.Expand(w.Secret, func(k string) (string, bool) {
		v, ok := w.Env[k]
		return v, ok
	})
	if err == nil && v == "" {
		d.add(kp, "resolves to an empty string: a webhook's secret must not be empty")
	}
}

// checkRefs: without an env_file, every ${VAR} of templates (by key) must
// be in env; with one, it is checked at use, when the file is read.
func (d *decoder) checkRefs(p []string, envFile string, env map[string]string, templates map[string]string) {
	if envFile != "" {
		return
	}
	for _, key := range slices.Sorted(maps.Keys(templates)) {
		refs, _ := endpoint.Refs(templates[key])
		for _, ref := range refs {
			if _, ok := env[ref]; !ok {
				kp := child(p, key)
				if key != "secret" {
					kp = child(p, "headers", key)
				}
				d.add(kp, "${%s} is not set: define it in env or in an env_file", ref)
			}
		}
	}
}

// checkWebhooks holds webhook paths unique and their harnesses to the
// file's jobs, and a listener to exist for them.
func (d *decoder) checkWebhooks(cfg *Config) {
	seen := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(cfg.Webhooks)) {
		w := cfg.Webhooks[name]
		p := []string{"webhook", name}
		if other, dup := seen[w.Path]; dup && w.Path != "" {
			d.add(child(p, "path"), "%s is also the path of webhook.%s", w.Path, other)
		}
		seen[w.Path] = name
		for _, h := range w.Harnesses {
			hc, ok := cfg.Harnesses[h]
			switch {
			case !ok:
				d.add(child(p, "harnesses"), "unknown harness %q", h)
			case !hc.IsJob():
				d.add(child(p, "harnesses"), `%s is not a job: give it a schedule or restart = "no" or "on-failure"`, h)
			}
		}
	}
	if len(cfg.Webhooks) > 0 && cfg.Daemon.WebhookListen == "" {
		d.warn([]string{"webhook", slices.Sorted(maps.Keys(cfg.Webhooks))[0]}, "[daemon] webhook_listen is not set: no webhook is served")
	}
}

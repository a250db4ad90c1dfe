package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/config"
)

// Delivery is what a verified request says about itself.
type Delivery struct {
	ID     string // the sender's delivery id; "" when it gives none
	Event  string // the event name ("pull_request", "Merge Request Hook", a standard webhook's type)
	Action string // the payload's "action", when it has one
	// Body is the hex SHA-256 of the body when the signature covers the
	// body alone (github, gitea): a captured delivery sent again under
	// another id, or none, is still the same body.
	Body string
}

var (
	// ErrSignature: the request does not prove it comes from the sender.
	ErrSignature = errors.New("signature or token does not match")
	// ErrNoSecret: the secret is empty, and an HMAC under an empty key is
	// one anyone can make.
	ErrNoSecret = errors.New("the webhook's secret is empty")
	// ErrNoDelivery: a signed delivery lacks the id its sender always
	// sends, which only a replay of a captured one does.
	ErrNoDelivery = errors.New("no delivery id")
)

// StandardTolerance is how far a standard webhook's timestamp may be from
// now (the Standard Webhooks specification's replay window).
const StandardTolerance = 5 * time.Minute

// Verify checks a request of scheme against secret and reads its
// delivery id and event. It is pure: now is the clock of timestamps.
func Verify(scheme, secret string, h http.Header, body []byte, now time.Time) (Delivery, error) {
	var d Delivery
	if secret == "" {
		return d, ErrNoSecret
	}
	switch scheme {
	case config.VerifyGitHub:
		if !hmacHex(secret, body, strings.TrimPrefix(h.Get("X-Hub-Signature-256"), "sha256=")) ||
			!strings.HasPrefix(h.Get("X-Hub-Signature-256"), "sha256=") {
			return d, ErrSignature
		}
		d.ID, d.Event, d.Body = h.Get("X-GitHub-Delivery"), h.Get("X-GitHub-Event"), digest(body)
	case config.VerifyGitea:
		sig := h.Get("X-Gitea-Signature")
		if sig == "" {
			sig = strings.TrimPrefix(h.Get("X-Hub-Signature-256"), "sha256=")
		}
		if !hmacHex(secret, body, sig) {
			return d, ErrSignature
		}
		d.ID, d.Event, d.Body = h.Get("X-Gitea-Delivery"), h.Get("X-Gitea-Event"), digest(body)
	case config.VerifyGitLab:
		if !equal(h.Get("X-Gitlab-Token"), secret) {
			return d, ErrSignature
		}
		d.ID, d.Event = h.Get("X-Gitlab-Event-UUID"), h.Get("X-Gitlab-Event")
		if d.ID == "" {
			d.ID = h.Get("Idempotency-Key")
		}
	case config.VerifyBearer:
		tok, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
		if !ok || !equal(tok, secret) {
			return d, ErrSignature
		}
		d.ID, d.Event = h.Get("Idempotency-Key"), h.Get("X-Event")
		if d.ID == "" {
			d.ID = h.Get("X-Request-Id")
		}
	case config.VerifyStandard:
		if err := verifyStandard(secret, h, body, now); err != nil {
			return d, err
		}
		d.ID = h.Get("webhook-id")
	default:
		return d, errors.New("unknown verify scheme")
	}
	// GitHub and Gitea send a delivery id with every delivery, and their
	// signature does not cover it.
	if d.Body != "" && d.ID == "" {
		return d, ErrNoDelivery
	}
	var p struct {
		Action string `json:"action"`
		Type   string `json:"type"`
	}
	if json.Unmarshal(body, &p) == nil {
		d.Action = p.Action
		if scheme == config.VerifyStandard {
			d.Event = p.Type
		}
	}
	return d, nil
}

// verifyStandard checks a Standard Webhooks signature: webhook-signature
// holds space-separated "v1,<base64 HMAC-SHA256>" of
// "<webhook-id>.<webhook-timestamp>.<body>", keyed by the secret (a
// "whsec_" prefix and base64, or the raw bytes otherwise), and the
// timestamp is within StandardTolerance of now.
func verifyStandard(secret string, h http.Header, body []byte, now time.Time) error {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return ErrSignature
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrSignature
	}
	if d := now.Sub(time.Unix(secs, 0)); d > StandardTolerance || d < -StandardTolerance {
		return errors.New("timestamp outside the tolerance: " + ErrSignature.Error())
	}
	key := []byte(secret)
	if b64, ok := strings.CutPrefix(secret, "whsec_"); ok {
		if key, err = base64.StdEncoding.DecodeString(b64); err != nil {
			return errors.New("the secret is not whsec_<base64>")
		}
	}
	if len(key) == 0 {
		return ErrNoSecret
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range strings.Fields(sigs) {
		v, sig, ok := strings.Cut(s, ",")
		if !ok || v != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrSignature
}

// digest is the hex SHA-256 of body.
func digest(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// hmacHex reports whether sig is the hex HMAC-SHA256 of body under secret.
func hmacHex(secret string, body []byte, sig string) bool {
	got, err := hex.DecodeString(sig)
	if err != nil || len(got) != sha256.Size || secret == "" {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// equal compares in constant time (for the length of a).
func equal(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// Wanted reports whether a delivery passes an events filter: an entry is
// an event name or "EVENT.ACTION"; no entries take every event.
func Wanted(events []string, d Delivery) bool {
	if len(events) == 0 {
		return true
	}
	for _, e := range events {
		if e == d.Event || (d.Action != "" && e == d.Event+"."+d.Action) {
			return true
		}
	}
	return false
}

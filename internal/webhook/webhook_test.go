package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-dev/harness/internal/config"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func hexMAC(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// TestScenario_EachSchemeAcceptsItsSenderOnly: every verify scheme takes a
// correctly signed delivery, reads its id and event, and refuses one with
// the wrong secret or none.
func TestScenario_EachSchemeAcceptsItsSenderOnly(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"action":"opened","type":"invoice.paid"}`)
	key := []byte("0123456789abcdef0123456789abcdef")
	whsec := "whsec_" + base64.StdEncoding.EncodeToString(key)
	ts := strconv.FormatInt(now.Unix(), 10)
	stdSig := func(k []byte) string {
		m := hmac.New(sha256.New, k)
		m.Write([]byte("msg_1." + ts + "."))
		m.Write(body)
		return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	}
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	for _, tt := range []struct {
		scheme, secret string
		good, bad      http.Header
		id, event      string
	}{
		{config.VerifyGitHub, "s3cret", h("X-Hub-Signature-256", "sha256="+hexMAC("s3cret", body), "X-GitHub-Delivery", "g1", "X-GitHub-Event", "pull_request"),
			h("X-Hub-Signature-256", hexMAC("s3cret", body)), "g1", "pull_request"},
		{config.VerifyGitea, "s3cret", h("X-Gitea-Signature", hexMAC("s3cret", body), "X-Gitea-Delivery", "t1", "X-Gitea-Event", "pull_request"),
			h("X-Gitea-Signature", hexMAC("other", body)), "t1", "pull_request"},
		{config.VerifyGitLab, "tok", h("X-Gitlab-Token", "tok", "X-Gitlab-Event-UUID", "l1", "X-Gitlab-Event", "Merge Request Hook"),
			h("X-Gitlab-Token", "tok2"), "l1", "Merge Request Hook"},
		{config.VerifyBearer, "tok", h("Authorization", "Bearer tok", "Idempotency-Key", "b1", "X-Event", "deploy"),
			h("Authorization", "tok"), "b1", "deploy"},
		{config.VerifyStandard, whsec, h("webhook-id", "msg_1", "webhook-timestamp", ts, "webhook-signature", stdSig(key)),
			h("webhook-id", "msg_1", "webhook-timestamp", ts, "webhook-signature", stdSig([]byte("wrong"))), "msg_1", "invoice.paid"},
	} {
		t.Run(tt.scheme, func(t *testing.T) {
			d, err := Verify(tt.scheme, tt.secret, tt.good, body, now)
			if err != nil || d.ID != tt.id || d.Event != tt.event || d.Action != "opened" {
				t.Errorf("good: %+v %v", d, err)
			}
			if _, err := Verify(tt.scheme, tt.secret, tt.bad, body, now); err == nil {
				t.Error("bad signature accepted")
			}
			if _, err := Verify(tt.scheme, tt.secret, http.Header{}, body, now); err == nil {
				t.Error("no signature accepted")
			}
			if _, err := Verify(tt.scheme, tt.secret, tt.good, append([]byte(" "), body...), now); err == nil && tt.scheme != config.VerifyGitLab && tt.scheme != config.VerifyBearer {
				t.Error("changed body accepted")
			}
		})
	}
	// A standard webhook outside the tolerance is refused.
	good := h("webhook-id", "msg_1", "webhook-timestamp", ts, "webhook-signature", stdSig(key))
	if _, err := Verify(config.VerifyStandard, whsec, good, body, now.Add(StandardTolerance+time.Second)); err == nil {
		t.Error("stale timestamp accepted")
	}
}

func TestWantedFilters(t *testing.T) {
	d := Delivery{Event: "pull_request", Action: "opened"}
	for events, want := range map[string]bool{"": true, "pull_request": true, "pull_request.opened": true,
		"pull_request.closed": false, "push": false} {
		var list []string
		if events != "" {
			list = []string{events}
		}
		if Wanted(list, d) != want {
			t.Errorf("Wanted(%q) = %v", events, !want)
		}
	}
}

func TestDedupOutlivesAReopenForADay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deliveries.jsonl")
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	d, err := openDedup(path, clock)
	if err != nil {
		t.Fatal(err)
	}
	add := func(route string, dl Delivery) bool {
		ok, err := d.add(route, dl)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	one, body := Delivery{ID: "1"}, Delivery{ID: "2", Body: "b"}
	if !add("gh", one) || add("gh", one) || !add("other", one) || !add("gh", body) {
		t.Error("first add")
	}
	d.close()
	now = now.Add(23 * time.Hour)
	d, _ = openDedup(path, clock)
	if add("gh", one) || add("gh", Delivery{ID: "3", Body: "b"}) || !add("gh", Delivery{ID: "4", Body: "c"}) {
		t.Error("forgotten after a reopen")
	}
	d.close()
	now = now.Add(2 * time.Hour)
	d, _ = openDedup(path, clock)
	defer d.close()
	if !add("gh", one) || !add("gh", Delivery{ID: "5", Body: "b"}) {
		t.Error("remembered past a day")
	}
}

func TestBucketLimitsPerMinute(t *testing.T) {
	now := time.Unix(0, 0)
	b := newBucket(2, now)
	if !b.take(now) || !b.take(now) || b.take(now) {
		t.Error("burst")
	}
	if !b.take(now.Add(30 * time.Second)) {
		t.Error("no refill after 30s at 2/min")
	}
}

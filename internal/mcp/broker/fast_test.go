package broker

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/mask"
)

// TestFastPath_ResultsAreMaskedHoweverTheUpstreamEscapesThem: a result
// forwarded as bytes is masked as bytes only when its strings are written
// as json.Marshal writes them; a secret an upstream escapes otherwise
// (\u0073, \/) is found in the decoded result, as on the go-sdk path.
func TestFastPath_ResultsAreMaskedHoweverTheUpstreamEscapesThem(t *testing.T) {
	const secret = "s3cr3t/value-0042"
	b := New(slog.New(slog.DiscardHandler), Options{})
	defer b.Close()
	c := &conn{t: &pipeTransport{env: Env{Mask: mask.New(secret).String}}}
	for _, tc := range []struct {
		name, raw string
		asBytes   bool
		size      int
	}{
		{"plain", `{"content":[{"type":"text","text":"k=s3cr3t/value-0042"}]}`, true, len("k=[masked]")},
		{"newline", `{"content":[{"type":"text","text":"a\nk=s3cr3t/value-0042"}],"structuredContent":{"k":"s3cr3t/value-0042"}}`, true, len("a\nk=[masked]")},
		{"unicode escape", `{"content":[{"type":"text","text":"k=\u00733cr3t/value-0042"}]}`, false, len("k=[masked]")},
		{"escaped solidus", `{"content":[{"type":"text","text":"k=s3cr3t\/value-0042"}]}`, false, len("k=[masked]")},
		{"html bytes", `{"content":[{"type":"text","text":"<k>=s3cr3t/value-0042"}]}`, false, len("<k>=[masked]")},
		{"no secret", `{"content":[{"type":"image","data":"aGVsbG8=","mimeType":"image/png"}]}`, true, len("aGVsbG8=")},
	} {
		fr, err := b.fastResult(c, "up", "tool", json.RawMessage(tc.raw))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var out []byte
		if tc.asBytes {
			if fr.Raw == nil {
				t.Errorf("%s: decoded, want forwarded as bytes", tc.name)
				continue
			}
			out = fr.Raw
			if fr.ContentBytes != tc.size {
				t.Errorf("%s: content bytes %d, want %d", tc.name, fr.ContentBytes, tc.size)
			}
		} else {
			if fr.Result == nil {
				t.Errorf("%s: forwarded as bytes, want decoded", tc.name)
				continue
			}
			out, _ = json.Marshal(fr.Result)
		}
		if strings.Contains(string(out), "value-0042") || strings.Contains(string(out), `value-0042`) {
			t.Errorf("%s: %s still carries the secret", tc.name, out)
		}
		if !json.Valid(out) {
			t.Errorf("%s: %s is not JSON", tc.name, out)
		}
	}
	// A content type the go-sdk does not know fails the call as the go-sdk
	// client's decoding does.
	if _, err := b.fastResult(c, "up", "tool", json.RawMessage(`{"content":[{"type":"hologram"}]}`)); errcode.Of(err) != errcode.UpstreamUnavailable {
		t.Errorf("unknown content type: %v, want upstream_unavailable", err)
	}
}

package web

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestScenario_ALargeFleetPageIsSmallAndCompressed: the fleet page
// of many harnesses carries the CSRF token once (every row's buttons
// share one form), comes gzip-compressed to a browser that takes gzip,
// and a filtered page, which echoes its filter, is never compressed. A
// row's stop button still stops its harness.
func TestScenario_ALargeFleetPageIsSmallAndCompressed(t *testing.T) {
	r := newRig(t)
	r.b.many = 300
	c := r.client()
	r.signIn(c, operatorToken)
	get := func(path, enc string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, r.ts.URL+path, nil)
		req.Header.Set("Accept-Encoding", enc)
		// The transport does not decompress a body it did not ask for.
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body io.Reader = resp.Body
		if resp.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}
	resp, page := get("/", "gzip, deflate, br")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("GET / with gzip: %d, encoding %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
	}
	if n := strings.Count(page, `class="unit`); n != 300 {
		t.Fatalf("the page has %d rows, want 300", n)
	}
	// Once for the rows, once for the sign-out form.
	if n := strings.Count(page, `name="csrf"`); n != 2 {
		t.Errorf("the CSRF field is in the page %d times, want twice", n)
	}
	if i := strings.Index(page, `data-name="h0007"`); i > 0 {
		t.Logf("a row: %s", page[strings.LastIndex(page[:i], "<tr"):i+strings.Index(page[i:], "</tr>")+5])
	}
	if per := len(page) / 300; per > 600 {
		t.Errorf("%d bytes per row, want <= 500", per)
	}
	resp, plain := get("/", "identity")
	if resp.Header.Get("Content-Encoding") != "" || plain != page {
		t.Errorf("GET / without gzip: encoding %q, same page %v", resp.Header.Get("Content-Encoding"), plain == page)
	}
	resp, _ = get("/?q=h00", "gzip")
	if resp.Header.Get("Content-Encoding") != "" {
		t.Error("a filtered page, which echoes its filter, was compressed")
	}
	resp, _ = get("/?fragment=1", "gzip")
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Error("the live fragment was not compressed")
	}

	_, _, csrf := r.page(c, "/")
	if st, _ := r.post(c, "/h/h0007/stop", url.Values{"csrf": {csrf}, "back": {"/"}}, map[string]string{csrfHeader: csrf}); st != 200 || !r.b.called(`stop {"name":"h0007"}`) {
		t.Fatalf("a row's stop: %d, stop of h0007 called: %v", st, r.b.called(`stop {"name":"h0007"}`))
	}
	if !strings.Contains(page, `formaction="/h/h0007/stop"`) {
		t.Error("row h0007 has no stop button")
	}
}

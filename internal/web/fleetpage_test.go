package web

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/api"
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

// TestScenario_ManyPagesShareOneRenderingOfTheFleetPerEvent: pages of two
// sign-ins fetch the fleet's live part after the same event and the fleet
// is listed once for both; the next event makes the next fetch list it
// again, and every open stream gets the event's frame as it was encoded.
func TestScenario_ManyPagesShareOneRenderingOfTheFleetPerEvent(t *testing.T) {
	r := newRig(t)
	r.b.many = 50
	lists := func() int {
		r.b.mu.Lock()
		defer r.b.mu.Unlock()
		n := 0
		for _, c := range r.b.calls {
			if strings.HasPrefix(c, "list ") {
				n++
			}
		}
		return n
	}
	var pages []*http.Client
	for range 2 {
		c := r.client()
		r.signIn(c, operatorToken)
		pages = append(pages, c)
	}
	before := lists()
	var first string
	for i, c := range pages {
		st, body, _ := r.page(c, "/?fragment=1")
		if st != 200 || !strings.Contains(body, `data-name="h0049"`) {
			t.Fatalf("page %d: fragment %d", i, st)
		}
		if i == 0 {
			first = body
		} else if body != first {
			t.Error("two pages got different fragments at the same generation")
		}
	}
	if n := lists() - before; n != 1 {
		t.Fatalf("two pages listed the fleet %d times for one generation, want once", n)
	}

	streams := []*stream{r.srv.hub.add(), r.srv.hub.add()}
	r.b.events <- api.Event{Kind: "state", Unit: "h0001", State: "stopped"}
	var frames [][]byte
	for _, st := range streams {
		frames = append(frames, <-st.ch)
		r.srv.hub.remove(st)
	}
	if !strings.HasPrefix(string(frames[0]), "event: unit\ndata: {") || &frames[0][0] != &frames[1][0] {
		t.Errorf("the event's frame %q was not encoded once for both streams", frames[0])
	}
	r.page(pages[1], "/?fragment=1")
	r.page(pages[0], "/?fragment=1")
	if n := lists() - before; n != 2 {
		t.Fatalf("after an event the pages listed the fleet %d times in all, want 2", n)
	}
}

// TestScenario_AFleetRowEscapesWhatAnAgentOrConfigWrote: names,
// descriptions, prompts and states with markup in them reach the row as
// text, in attributes and in content alike.
func TestScenario_AFleetRowEscapesWhatAnAgentOrConfigWrote(t *testing.T) {
	evil := `"><script>alert(1)</script>'`
	u := unitView{UnitInfo: api.UnitInfo{Name: "x" + evil, State: "running" + evil, Description: evil, Activity: evil, Schedule: "@daily"},
		AgentState: "waiting", Prompt: evil}
	row := string(fleetRows([]unitView{u}, true))
	if strings.Contains(row, "<script") || strings.Contains(row, `'>`) {
		t.Fatalf("markup reached the row unescaped:\n%s", row)
	}
	if n := strings.Count(row, "&lt;script&gt;"); n < 6 {
		t.Errorf("the text shows %d times escaped, want every field:\n%s", n, row)
	}
	if !strings.Contains(row, `data-act="trigger"`) || !strings.Contains(row, `formaction="/h/x%22%3E%3Cscript%3Ealert%281%29%3C%2Fscript%3E%27/start"`) {
		t.Errorf("the row's actions:\n%s", row)
	}
}

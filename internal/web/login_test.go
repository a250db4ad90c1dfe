package web

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// signInFrom posts the login form with a next field and returns the
// status and where the answer sends the browser.
func (r *rig) signInFrom(c *http.Client, token, next string) (int, string) {
	r.t.Helper()
	resp, err := c.PostForm(r.ts.URL+"/login", url.Values{"token": {token}, "next": {next}})
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// location GETs path without following redirects and returns the status
// and the Location.
func (r *rig) location(c *http.Client, path string) (int, string) {
	r.t.Helper()
	resp, err := c.Get(r.ts.URL + path)
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

func TestScenario_SignInReturnsToThePageThatAskedForIt(t *testing.T) {
	r := newRig(t)
	for _, target := range []string{"/h/w?run=2", "/h/p%2Fa", "/calls?harness=w"} {
		c := r.client()
		st, loc := r.location(c, target)
		if st != http.StatusSeeOther || loc != "/login?next="+url.QueryEscape(target) {
			t.Fatalf("GET %s signed out = %d to %q, want a redirect to the login page that keeps the destination", target, st, loc)
		}
		st, body, _ := r.page(c, loc)
		field := `<input type="hidden" name="next" value="` + strings.ReplaceAll(target, "&", "&amp;") + `">`
		if st != http.StatusOK || !strings.Contains(body, field) {
			t.Fatalf("GET %s = %d without the destination in its form (%s):\n%s", loc, st, field, body)
		}
		if st, loc := r.signInFrom(c, operatorToken, target); st != http.StatusSeeOther || loc != target {
			t.Fatalf("sign-in with next=%s = %d to %q, want back to %s", target, st, loc, target)
		}
		if st, _, _ := r.page(c, target); st != http.StatusOK {
			t.Fatalf("GET %s after sign-in = %d", target, st)
		}
	}
	// A wrong token keeps the destination for the next attempt.
	c := r.client()
	resp, err := c.PostForm(r.ts.URL+"/login", url.Values{"token": {"wrong"}, "next": {"/h/w"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	if _, err := io.Copy(&b, resp.Body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(b.String(), `name="next" value="/h/w"`) {
		t.Fatalf("a refused sign-in = %d, and lost its destination:\n%s", resp.StatusCode, b.String())
	}
	// The fleet itself needs no next.
	if st, loc := r.location(r.client(), "/"); st != http.StatusSeeOther || loc != "/login" {
		t.Fatalf("GET / signed out = %d to %q, want /login", st, loc)
	}
}

func TestScenario_SignInNeverSendsTheBrowserOffSite(t *testing.T) {
	r := newRig(t)
	for _, next := range []string{
		"https://evil.example/", "http://127.0.0.1.evil.example/h/w", "//evil.example/h/w", "///evil.example",
		`/\evil.example`, `\\evil.example`, `/h/w\..\..\`, "javascript:alert(1)", "/\t/evil.example",
		"/\n/evil.example", "h/w", "", "/login", "/login?next=//evil.example", "/logout", "/h/w x",
		"/" + strings.Repeat("a", maxNext),
	} {
		c := r.client()
		_, body, _ := r.page(c, "/login?next="+url.QueryEscape(next))
		if next != "" && strings.Contains(body, `name="next"`) {
			t.Errorf("the login page kept next=%q in its form", next)
		}
		if st, loc := r.signInFrom(c, operatorToken, next); st != http.StatusSeeOther || loc != "/" {
			t.Errorf("sign-in with next=%q = %d to %q, want the fleet (/)", next, st, loc)
		}
	}
}

func TestLocalNext(t *testing.T) {
	for in, want := range map[string]bool{
		"/h/w":                 true,
		"/h/shop%2Fecho":       true,
		"/h/w?run=3":           true,
		"/calls?harness=w&n=2": true,
		"/":                    false, // the default needs no field
		"":                     false,
		"h/w":                  false,
		"//evil.example":       false,
		"/\\evil.example":      false,
		"/h/w\\x":              false,
		"https://evil.example": false,
		"javascript:x":         false,
		"/\t/evil.example":     false,
		"/h/\x7f":              false,
		"/h/é":                 false,
		"/login":               false,
		"/login?next=/h/w":     false,
		"/logout":              false,
		"/h/w#frag":            false,
	} {
		if got := localNext(in); got != want {
			t.Errorf("localNext(%q) = %v, want %v", in, got, want)
		}
	}
}

// The sign-in page leads with the dashboard token that can act and answer,
// says how to make one, and says the operator token is read-only unless
// configured otherwise.
func TestScenario_TheSignInPageSaysHowToGetATokenThatCanAnswer(t *testing.T) {
	r := newRig(t)
	st, body, _ := r.page(r.client(), "/login")
	if st != http.StatusOK {
		t.Fatalf("GET /login = %d", st)
	}
	mint := strings.Index(body, "harness mcp token --dashboard --grant read,write,input")
	op := strings.Index(body, "operator token")
	if mint < 0 || op < 0 || op < mint {
		t.Fatalf("the page does not lead with the minting command (at %d) before the operator token (at %d):\n%s", mint, op, body)
	}
	for _, want := range []string{"answer prompts", "read-only unless", "mcp_http_operator_allow"} {
		if !strings.Contains(body, want) {
			t.Errorf("the sign-in page does not say %q:\n%s", want, body)
		}
	}
	if !strings.Contains(body[op:], "read-only unless") {
		t.Errorf("the page does not say the operator token is read-only by default:\n%s", body)
	}
}

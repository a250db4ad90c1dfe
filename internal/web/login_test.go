package web

import (
	"net/http"
	"strings"
	"testing"
)

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

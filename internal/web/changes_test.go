package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/dashtoken"
	"github.com/harness-dev/harness/internal/errcode"
)

// fakeDiff is the diff of harness "w"; any other has no git checkout.
func fakeDiff(args json.RawMessage) (any, error) {
	var a api.DiffArgs
	_ = json.Unmarshal(args, &a)
	if a.Name != "w" {
		return nil, errcode.Errorf(errcode.InvalidArgument, "harness %s: %s is not a git checkout", a.Name, "/tmp/x")
	}
	return api.Diff{Base: "b", Head: "h", BaseRef: "main", Files: []api.DiffFile{
		{Path: "app.go", Status: api.DiffModified, Added: 2, Deleted: 1, Hunks: []api.DiffHunk{
			{OldStart: 10, OldLines: 3, NewStart: 10, NewLines: 4, Lines: []string{" keep", "-old <b>", "+new", "+more", " tail"}}}},
		{Path: "logo.png", Status: api.DiffAdded, Binary: true, Hunks: []api.DiffHunk{}},
	}}, nil
}

func TestScenario_TheChangesViewNumbersLinesAndSendsAReview(t *testing.T) {
	r := newRig(t)
	c := r.client()
	r.signIn(c, operatorToken)
	_, body, csrf := r.page(c, "/h/w")
	for _, want := range []string{
		`id="changes"`, `2 files`, `against main`,
		`<tr class="l-del" data-path="app.go" data-line="11"><td class="ln">11</td><td class="ln"></td><td class="code">old &lt;b&gt;</td></tr>`,
		`<tr class="l-add" data-path="app.go" data-line="12"><td class="ln"></td><td class="ln">12</td><td class="code">more</td></tr>`,
		`<tr class="l-ctx" data-path="app.go" data-line="13"><td class="ln">12</td><td class="ln">13</td><td class="code">tail</td></tr>`,
		`binary file`, `id="send-review"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	// A harness without a git checkout has no Changes section.
	if _, plain, _ := r.page(c, "/h/plain"); strings.Contains(plain, `id="changes"`) {
		t.Error("a harness without a git checkout shows a Changes section")
	}
	// Send review: the line comments and the typed ones, as one review.
	st, _ := r.post(c, "/h/w/review", url.Values{"csrf": {csrf}, "comment": {"app.go:12: why more?"},
		"comments": {"app.go:11: keep this\n\n"}}, map[string]string{csrfHeader: csrf})
	if st != http.StatusOK || !r.b.called(api.OpReview+` {"name":"w","comments":["app.go:12: why more?","app.go:11: keep this"]}`) {
		t.Errorf("review POST = %d; calls %v", st, r.b.calls)
	}
}

func TestScenario_AReadOnlyTokenCannotSendAReview(t *testing.T) {
	r := newRig(t)
	tok, _, err := dashtoken.Mint(r.state, []string{"read"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := r.client()
	r.signIn(c, tok)
	_, body, csrf := r.page(c, "/h/w")
	if !strings.Contains(body, `id="send-review" disabled`) {
		t.Error("a read-only page offers Send review")
	}
	if st, _ := r.post(c, "/h/w/review", url.Values{"csrf": {csrf}, "comment": {"app.go:12: x"}}, nil); st != http.StatusForbidden || r.b.called(api.OpReview) {
		t.Errorf("read-only review POST = %d", st)
	}
}

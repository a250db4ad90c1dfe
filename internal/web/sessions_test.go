package web

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/dashtoken"
	"github.com/harness-dev/harness/internal/errcode"
)

// A read-only token signed in hundreds of times ends only its own oldest
// sessions: the operator's earlier session still answers.
func TestScenario_ManyReadOnlySignInsNeverEvictTheOperator(t *testing.T) {
	r := newRig(t)
	tok, _, err := dashtoken.Mint(r.state, []string{"read"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	op := r.client()
	if st := r.signIn(op, operatorToken); st != http.StatusSeeOther {
		t.Fatalf("operator sign-in = %d", st)
	}
	first := r.client()
	r.advance(time.Millisecond)
	if st := r.signIn(first, tok); st != http.StatusSeeOther {
		t.Fatalf("first read-only sign-in = %d", st)
	}
	const signIns = 300 // past the old global bound of 256
	for i := range signIns {
		r.advance(time.Millisecond) // each later sign-in expires later
		if st := r.signIn(r.client(), tok); st != http.StatusSeeOther {
			t.Fatalf("read-only sign-in %d = %d", i, st)
		}
	}
	if st, _, _ := r.page(op, "/"); st != http.StatusOK {
		t.Fatalf("the operator's session after %d read-only sign-ins: GET / = %d, want 200", signIns, st)
	}
	if st, _, _ := r.page(first, "/"); st != http.StatusSeeOther {
		t.Fatalf("the read-only token's oldest session: GET / = %d, want a redirect (it gave way)", st)
	}
	r.srv.mu.Lock()
	n := len(r.srv.sessions)
	r.srv.mu.Unlock()
	if n != maxSessionsPerCredential+1 {
		t.Fatalf("%d sessions held, want the read token's %d and the operator's", n, maxSessionsPerCredential)
	}
}

// When every place is taken by other tokens' live sessions, a sign-in is
// refused (429, busy) rather than ending one of them.
func TestScenario_AFullDashboardRefusesASignInInsteadOfEvicting(t *testing.T) {
	r := newRig(t)
	var toks []string
	for range maxSessions/maxSessionsPerCredential + 1 {
		tok, _, err := dashtoken.Mint(r.state, []string{"read"}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		toks = append(toks, tok)
	}
	for _, tok := range toks[:len(toks)-1] {
		for range maxSessionsPerCredential {
			if sess, err := r.srv.signIn(tok); sess == nil || err != nil {
				t.Fatalf("sign-in below the bound: %v, %v", sess, err)
			}
		}
	}
	sess, err := r.srv.signIn(toks[len(toks)-1])
	if sess != nil || !errors.Is(err, errcode.ErrBusy) {
		t.Fatalf("sign-in past %d sessions = %v, %v; want busy", maxSessions, sess, err)
	}
	if st := r.signIn(r.client(), toks[len(toks)-1]); st != http.StatusTooManyRequests {
		t.Fatalf("sign-in page past the bound = %d, want 429", st)
	}
	r.srv.mu.Lock()
	n := len(r.srv.sessions)
	r.srv.mu.Unlock()
	if n != maxSessions {
		t.Fatalf("%d sessions held after refused sign-ins, want %d", n, maxSessions)
	}
}

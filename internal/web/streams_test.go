package web

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/dashtoken"
	"github.com/harness-dev/harness/internal/errcode"
)

// Streams are bounded per session, per credential (half the overall bound)
// and overall; a refused stream is busy, and a closed one frees its place.
func TestScenario_StreamsAreBoundedPerSessionPerTokenAndOverall(t *testing.T) {
	r := newRig(t)
	overall := r.srv.opt.MaxStreams
	perCred := r.srv.perCredentialStreams()
	sessionOf := func(tok string) *session {
		t.Helper()
		sess, err := r.srv.signIn(tok)
		if sess == nil || err != nil {
			t.Fatalf("sign-in: %v, %v", sess, err)
		}
		return sess
	}
	fill := func(what, tok string, n int) (last func()) {
		t.Helper()
		for i := 0; i < n; {
			sess := sessionOf(tok)
			for j := 0; j < maxStreamsPerSession && i < n; j, i = j+1, i+1 {
				rel, err := r.srv.openStream(sess)
				if err != nil {
					t.Fatalf("%s: stream %d below the bounds: %v", what, i, err)
				}
				last = rel
			}
			if i < n {
				if _, err := r.srv.openStream(sess); !errors.Is(err, errcode.ErrBusy) {
					t.Fatalf("%s: stream %d of one session = %v, want busy", what, maxStreamsPerSession+1, err)
				}
			}
		}
		return last
	}
	fill("operator", operatorToken, perCred)
	if _, err := r.srv.openStream(sessionOf(operatorToken)); !errors.Is(err, errcode.ErrBusy) {
		t.Fatalf("the operator's stream %d = %v, want busy (per credential)", perCred+1, err)
	}
	reader, _, err := dashtoken.Mint(r.state, []string{"read"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	release := fill("read-only token", reader, overall-perCred)
	other, _, err := dashtoken.Mint(r.state, []string{"read"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	otherSess := sessionOf(other)
	if _, err := r.srv.openStream(otherSess); !errors.Is(err, errcode.ErrBusy) {
		t.Fatalf("stream %d overall = %v, want busy", overall+1, err)
	}
	release()
	if _, err := r.srv.openStream(otherSess); err != nil {
		t.Fatalf("a stream after one closed: %v", err)
	}
}

// A raw terminal whose session's grant loses input (the operator's, by a
// reload) is ended before its next output: the program's bytes go only to
// someone who may type.
func TestScenario_ARawTerminalEndsWhenItsGrantLosesInput(t *testing.T) {
	old := grantRecheck
	grantRecheck = 0 // check before every frame
	defer func() { grantRecheck = old }()
	r := newRig(t)
	ws := r.operatorTerminal("a")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	as, v := r.b.attached()
	if as[0].Masked {
		t.Fatal("the operator with input got a masked viewer")
	}
	v.out <- []byte("before")
	if _, data, err := ws.Read(ctx); err != nil || string(data) != "before" {
		t.Fatalf("output before = %q, %v", data, err)
	}
	readOnly, _ := api.ParseGrant([]string{"read"})
	r.b.mu.Lock()
	r.b.grant = readOnly
	r.b.mu.Unlock()
	v.out <- []byte("after: raw bytes")
	_, data, err := ws.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Fatalf("after the grant lost input: read %q, %v; want the stream closed", data, err)
	}
}

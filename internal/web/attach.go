package web

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
)

// The terminal's WebSocket (GET /h/NAME/attach). The upgrade is checked
// like any request (Host, Origin, session cookie); the first message must
// be the hello below with the session's CSRF token, so a page of another
// site that got a socket open could still not attach. Then:
//
//	server -> browser: binary = the program's output (a repaint first),
//	                   text   = an api.AttachEvent notice as JSON
//	browser -> server: binary = keys, text = {"type":"resize","cols","rows"}
//
// Keys and resizes need the input class; without it the viewer is
// read-only and each refused key is answered with a notice, never typed.
const (
	// maxFrame bounds one message from the browser.
	maxFrame = 64 << 10
	// helloTimeout bounds the wait for the hello.
	helloTimeout = 10 * time.Second
)

// grantRecheck is how often, at most, a terminal's output is held up to
// check its session and grant again (a file stat for a dashboard token).
// A variable for the tests.
var grantRecheck = time.Second

type attachHello struct {
	CSRF string `json:"csrf"`
	Cols int    `json:"cols"`
	Rows int    `json:"rows"`
}

type attachControl struct {
	Type string `json:"type"`
	Cols int    `json:"cols"`
	Rows int    `json:"rows"`
}

func (s *Server) serveAttach(w http.ResponseWriter, r *http.Request, rq *request, name string) {
	if !rq.may(api.AttachClass(true)) {
		s.fail(w, r, http.StatusForbidden, "this token's grant does not include read")
		return
	}
	// A writer's stream needs input besides read: its raw bytes go only
	// to someone who may type. Whether it is a writer is known before
	// the hello, since it is the grant's alone.
	needs := []api.Class{api.AttachClass(true)}
	if rq.may(api.AttachClass(false)) {
		needs = append(needs, api.AttachClass(false))
	}
	ls, release, ok := s.admitStream(w, r, rq, needs...)
	if !ok {
		return
	}
	defer release()
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		// ServeHTTP has checked Origin by the MCP door's rule (loopback,
		// any port); the library's same-host rule would refuse a tunnel.
		InsecureSkipVerify: true,
	})
	if err != nil {
		s.log.Info("websocket upgrade refused", logkey.Remote, r.RemoteAddr, logkey.Err, err)
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(maxFrame)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-s.ctx.Done():
			cancel()
		case <-rq.sess.revoked:
			// A revoked device's terminal ends now, idle or not.
			s.log.Info("dashboard terminal ended: device revoked", logkey.Harness, name, logkey.Session, rq.sess.who())
			c.Close(websocket.StatusPolicyViolation, "this device was revoked")
			cancel()
		case <-ls.ended:
			// Idle or not: a reload or a revoked token took the grant
			// it needs (recheck.go, which logged it).
			c.Close(websocket.StatusPolicyViolation, closeReason(ls.reason()+": reload the page"))
			cancel()
		case <-ctx.Done():
		}
	}()

	hctx, hcancel := context.WithTimeout(ctx, helloTimeout)
	typ, data, err := c.Read(hctx)
	hcancel()
	var hello attachHello
	if err != nil || typ != websocket.MessageText || json.Unmarshal(data, &hello) != nil {
		c.Close(websocket.StatusPolicyViolation, "the first message must be the attach hello")
		return
	}
	a, b := sha256.Sum256([]byte(hello.CSRF)), sha256.Sum256([]byte(rq.sess.csrf))
	if hello.CSRF == "" || subtle.ConstantTimeCompare(a[:], b[:]) != 1 {
		s.log.Warn("refused a terminal without its CSRF token", logkey.Harness, name, logkey.Remote, r.RemoteAddr)
		c.Close(websocket.StatusPolicyViolation, "missing or wrong CSRF token")
		return
	}
	writer := rq.may(api.AttachClass(false))
	// Without input the viewer only watches, and sees no more than
	// `screen` shows: the masked screen, never the program's bytes.
	args := api.AttachArgs{Name: name, ReadOnly: !writer, Masked: !writer}
	if writer {
		args.Cols, args.Rows = hello.Cols, hello.Rows
	}
	v, err := s.b.Attach(ctx, s.callerOf(rq), args)
	if err != nil {
		s.sendNotice(ctx, c, api.AttachEvent{Kind: api.AttachEnded, Name: name, Message: err.Error()})
		c.Close(websocket.StatusNormalClosure, string(errcode.Of(err)))
		return
	}
	defer v.Close()
	s.log.Info("dashboard terminal attached", logkey.Harness, name, logkey.ReadOnly, !writer, logkey.Session, rq.sess.who())

	go s.attachInput(ctx, cancel, c, v, r, rq.sess, name, writer)
	var checked time.Time
	for {
		out, ev, err := v.Next(ctx)
		switch {
		case errors.Is(err, io.EOF):
			c.Close(websocket.StatusNormalClosure, "ended")
			return
		case err != nil:
			return
		}
		if ev != nil {
			if !s.sendNotice(ctx, c, *ev) {
				return
			}
			continue
		}
		if time.Since(checked) >= grantRecheck {
			// A sign-out or a revoked token ends the stream; a grant
			// narrowed by a reload below input ends a raw one, whose
			// bytes only a person who may type gets.
			grant, ok := s.liveSession(r, rq.sess)
			if !ok || writer && !grant.Allows(api.FacadeNamespace, api.AttachClass(false)) {
				s.log.Info("dashboard terminal ended: signed out or no longer granted input", logkey.Harness, name, logkey.Session, rq.sess.who())
				c.Close(websocket.StatusPolicyViolation, "signed out, or the grant no longer includes input: reload the page")
				return
			}
			checked = time.Now()
		}
		wctx, wcancel := context.WithTimeout(ctx, writeTimeout)
		err = c.Write(wctx, websocket.MessageBinary, out)
		wcancel()
		if err != nil {
			// A browser that stops reading is cut off; the viewer's own
			// lag bound kept its backlog small until now.
			return
		}
	}
}

// closeReason is why as a close frame carries it: at most 123 bytes, cut
// at a character's start (a longer one fails the close).
func closeReason(why string) string {
	const limit = 123
	if len(why) <= limit {
		return why
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(why[cut]) {
		cut--
	}
	return why[:cut]
}

func (s *Server) sendNotice(ctx context.Context, c *websocket.Conn, ev api.AttachEvent) bool {
	data, err := json.Marshal(ev)
	if err != nil {
		return false
	}
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	return c.Write(wctx, websocket.MessageText, data) == nil
}

// attachInput reads the browser's messages one at a time, so a flood is
// held back by the PTY's own pace (Input waits, bounded, for the write)
// and by TCP; each is at most maxFrame. The session is checked again per
// message: a sign-out or a revoked token stops the keys at once.
func (s *Server) attachInput(ctx context.Context, cancel context.CancelFunc, c *websocket.Conn, v Viewer, r *http.Request, sess *session, name string, writer bool) {
	defer cancel()
	refused := 0
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		grant, ok := s.liveSession(r, sess)
		if !ok {
			c.Close(websocket.StatusPolicyViolation, "signed out")
			return
		}
		if !writer || !grant.Allows(api.FacadeNamespace, api.AttachClass(false)) {
			refused++
			if refused == 1 || refused%100 == 0 {
				s.log.Warn("dashboard keys refused: no input grant", logkey.Harness, name, logkey.Count, refused)
				s.sendNotice(ctx, c, api.AttachEvent{Kind: api.AttachNotice, Message: "read-only: this token's grant has no input; keys are not sent"})
			}
			continue
		}
		switch typ {
		case websocket.MessageBinary:
			err = v.Input(ctx, data)
		case websocket.MessageText:
			var m attachControl
			if json.Unmarshal(data, &m) != nil || m.Type != "resize" {
				s.sendNotice(ctx, c, api.AttachEvent{Kind: api.AttachNotice, Message: "unknown control message"})
				continue
			}
			err = v.Resize(ctx, m.Cols, m.Rows)
		}
		if err != nil && ctx.Err() == nil {
			s.sendNotice(ctx, c, api.AttachEvent{Kind: api.AttachNotice, Message: err.Error()})
		}
	}
}

package web

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
)

type pages struct{ t *template.Template }

func parsePages() (*pages, error) {
	t, err := template.New("").Funcs(template.FuncMap{
		"ago":      ago,
		"until":    until,
		"exitText": exitText,
		"holdText": holdText,
		"clock":    clock,
		"usd":      usd,
		"hpath":    hpath,
		"count":    count,
		"hostPath": hostPath,
		"hostPage": hostPage,
		"rows":     fleetRows,
	}).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("web: templates: %w", err)
	}
	return &pages{t: t}, nil
}

// page is what every full page carries besides its own view.
type page struct {
	Title string
	// Waiting is how many agents wait, for the title ("(2) Fleet"); the
	// script keeps it live. Only the fleet page knows it when rendered.
	Waiting int
	CSRF    string
	Who     string
	Grant   string
	May     map[string]bool // by class name, for the templates
	View    any
}

func (s *Server) newPage(rq *request, title string, view any) page {
	return page{
		Title: title, CSRF: rq.sess.csrf, Who: rq.sess.who(), Grant: strings.Join(rq.grant.Strings(), ","),
		May:  map[string]bool{"read": rq.may(api.Read), "write": rq.may(api.Write), "input": rq.may(api.Input)},
		View: view,
	}
}

// render executes a template into a buffer first, so a failure is a clean
// 500 with a message, never half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	s.renderMaybeGzip(w, r, status, name, data, false)
}

// renderMaybeGzip is render, the page gzip-compressed when gz is set, the
// client takes gzip and the page is large enough to gain from it. Only a
// page that reflects nothing of its request may be compressed: it carries
// the session's CSRF token, and a compressed page whose size an attacker
// can steer by what it echoes leaks that token a byte at a time (BREACH).
func (s *Server) renderMaybeGzip(w http.ResponseWriter, r *http.Request, status int, name string, data any, gz bool) {
	buf := pageBufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer pageBufs.Put(buf)
	if err := s.pages.t.ExecuteTemplate(buf, name, data); err != nil {
		s.log.Error("rendering a page", logkey.Path, name, logkey.Err, err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	if gz {
		hdr.Add("Vary", "Accept-Encoding")
	}
	if !gz || buf.Len() < gzipMin || !acceptsGzip(r) {
		w.WriteHeader(status)
		if r.Method != http.MethodHead {
			_, _ = w.Write(buf.Bytes())
		}
		return
	}
	hdr.Set("Content-Encoding", "gzip")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(w)
	_, _ = zw.Write(buf.Bytes())
	_ = zw.Close()
	gzipWriters.Put(zw)
}

// gzipMin is the smallest page worth compressing: below a few packets the
// work saves no round trip.
const gzipMin = 8 << 10

var (
	pageBufs    = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	gzipWriters = sync.Pool{New: func() any {
		// BestSpeed: the fleet page of 1,000 rows compresses ~10x in a
		// few milliseconds; higher levels cost more than the bytes save on
		// a LAN or loopback.
		zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
		return zw
	}}
)

// acceptsGzip reports whether the request's Accept-Encoding takes gzip
// (with a q-value other than 0).
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, part := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
				continue
			}
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

type errorView struct {
	Status  int
	Message string
}

// loginView is the sign-in form: a refusal's message, and the local page
// to return to after signing in ("" for the fleet).
type loginView struct{ Error, Next string }

// fail answers a refusal or an error with its status and a plain message
// (a page for a browser's navigation, text for the script's fetches).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusTooManyRequests {
		w.Header().Set("Connection", "close")
	}
	if strings.Contains(r.Header.Get("Accept"), "text/html") && r.Header.Get(csrfHeader) == "" {
		s.render(w, r, status, "error.html", errorView{Status: status, Message: msg})
		return
	}
	http.Error(w, msg, status)
}

// failOp answers an operation's error with the status its code means.
func (s *Server) failOp(w http.ResponseWriter, r *http.Request, err error) {
	code := errcode.Of(err)
	status := http.StatusBadRequest
	switch code {
	case errcode.UnknownHarness:
		status = http.StatusNotFound
	case errcode.NotPermitted:
		status = http.StatusForbidden
	case errcode.Internal, errcode.DaemonUnavailable:
		status = http.StatusInternalServerError
	case errcode.NotRunning, errcode.NotWaiting, errcode.Held:
		status = http.StatusConflict
	}
	if errors.Is(err, context.Canceled) {
		status = http.StatusServiceUnavailable
	}
	s.fail(w, r, status, fmt.Sprintf("%s: %v", code, err))
}

// unitView is a list/describe row with the agent fields (docs/design/agents.md),
// decoded when the daemon sends them.
type unitView struct {
	api.UnitInfo
	AgentState string          `json:"agent_state,omitempty"`
	WaitingFor string          `json:"waiting_for,omitempty"`
	Prompt     string          `json:"prompt,omitempty"`
	RawChoices json.RawMessage `json:"choices,omitempty"`
	// Suggested is the choice that lets the agent go on, when its
	// adapter knows it.
	Suggested  string          `json:"suggested,omitempty"`
	Hold       json.RawMessage `json:"hold,omitempty"`
	Held       bool            `json:"held,omitempty"`
	LastError  string          `json:"last_error,omitempty"`
	CurrentRun *api.Run        `json:"current_run,omitempty"`
}

// choice is one answer a waiting prompt offers.
type choice struct {
	Key   string `json:"key"`
	Label string `json:"label"`
}

// Choices reads the prompt's choices as strings or {key,label} objects.
func (u unitView) Choices() []choice {
	if len(u.RawChoices) == 0 {
		return nil
	}
	var strs []string
	if json.Unmarshal(u.RawChoices, &strs) == nil {
		out := make([]choice, len(strs))
		for i, s := range strs {
			out[i] = choice{Key: s, Label: s}
		}
		return out
	}
	var objs []struct {
		Key   string `json:"key"`
		ID    string `json:"id"`
		Label string `json:"label"`
		Text  string `json:"text"`
	}
	if json.Unmarshal(u.RawChoices, &objs) != nil {
		return nil
	}
	out := make([]choice, 0, len(objs))
	for i, o := range objs {
		c := choice{Key: cmp.Or(o.Key, o.ID, strconv.Itoa(i+1)), Label: cmp.Or(o.Label, o.Text, o.Key, o.ID)}
		out = append(out, c)
	}
	return out
}

// Waiting reports whether the agent waits for its user.
func (u unitView) Waiting() bool { return u.AgentState == "waiting" }

// HoldText says why a unit is held, if it is.
func (u unitView) HoldText() string {
	if t := holdText(u.Hold); t != "" {
		return t
	}
	if u.Held {
		return "held"
	}
	return ""
}

type group struct {
	Project string
	Units   []unitView
}

type fleetView struct {
	Groups []group
	// Hosts are the other machines' fleets (remotes.go).
	Hosts   []hostSection
	Count   int
	Waiting int
	Filter  string
}

func (s *Server) fleet(ctx context.Context, filter string) (fleetView, error) {
	var units []unitView
	if err := s.call(ctx, api.OpList, api.ListArgs{}, &units); err != nil {
		return fleetView{}, err
	}
	v := fleetView{Filter: filter}
	by := map[string][]unitView{}
	for _, u := range units {
		if filter != "" && !matches(u, filter) {
			continue
		}
		by[u.Project] = append(by[u.Project], u)
		v.Count++
		if u.Waiting() {
			v.Waiting++
		}
	}
	for p, us := range by {
		slices.SortStableFunc(us, func(a, b unitView) int {
			if a.Waiting() != b.Waiting() {
				if a.Waiting() {
					return -1
				}
				return 1
			}
			return strings.Compare(a.Name, b.Name)
		})
		v.Groups = append(v.Groups, group{Project: p, Units: us})
	}
	slices.SortFunc(v.Groups, func(a, b group) int {
		// Groups with a waiting agent first, then global, then by name.
		wa, wb := a.Units[0].Waiting(), b.Units[0].Waiting()
		if wa != wb {
			if wa {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Project, b.Project)
	})
	return v, nil
}

func matches(u unitView, filter string) bool {
	hay := strings.ToLower(strings.Join([]string{u.Name, u.State, u.Project, u.AgentState, u.Activity, u.Description}, " "))
	for _, w := range strings.Fields(strings.ToLower(filter)) {
		if !strings.Contains(hay, w) {
			return false
		}
	}
	return true
}

func (s *Server) serveFleet(w http.ResponseWriter, r *http.Request, rq *request) {
	if !rq.may(api.Read) {
		s.fail(w, r, http.StatusForbidden, "this token's grant does not include read")
		return
	}
	if r.URL.Query().Get("fragment") != "" && r.URL.Query().Get("q") == "" && !s.hasRemotes() {
		s.serveFleetFragment(w, r, rq)
		return
	}
	v, err := s.fleet(r.Context(), r.URL.Query().Get("q"))
	if err != nil {
		s.failOp(w, r, err)
		return
	}
	v.Hosts = s.remoteSections(rq, v.Filter)
	for _, h := range v.Hosts {
		v.Count += h.Count
		v.Waiting += h.Waiting
	}
	p := s.newPage(rq, "Fleet", v)
	if v.Filter == "" {
		p.Waiting = v.Waiting
	}
	// Unfiltered, the page echoes nothing of the request: it may be
	// compressed (renderMaybeGzip).
	gz := v.Filter == ""
	if r.URL.Query().Get("fragment") != "" {
		s.renderMaybeGzip(w, r, http.StatusOK, "fleet-live", p, gz)
		return
	}
	s.renderMaybeGzip(w, r, http.StatusOK, "fleet.html", p, gz)
}

type harnessView struct {
	Unit     unitView
	Runs     []api.Run
	Calls    []api.CallRecord
	Terminal bool
	Notice   string
	// Run is the run whose turns the page shows (?run=N); 0 follows the
	// current run.
	Run uint64
	// Turns is the conversation of the harness's agent; nil for a harness
	// without one (a generic program, an upstream) and in the live part,
	// which does not read the transcript on every event.
	Turns *turnsView
	// Changes is the Changes section (changes.go); nil in the live part.
	Changes *changesSection
}

// Fragment is the URL of the page's live part.
func (v harnessView) Fragment() string {
	u := hpath(v.Unit.Name) + "?fragment=1"
	if v.Run != 0 {
		u += "&run=" + strconv.FormatUint(v.Run, 10)
	}
	return u
}

// HasTurns reports whether the harness's agent keeps a transcript the
// turns op reads (every agent harness knows but the generic one).
func (v harnessView) HasTurns() bool {
	return v.Unit.Agent != "" && v.Unit.Agent != "generic" && v.Terminal
}

// turnsView is the turns section of a harness page: what the turns op
// answers (docs/design/agents.md, masked by the daemon like `harness turns`), or why
// there is nothing to show yet.
type turnsView struct {
	Name string
	Run  uint64 // as asked: 0 follows the current run
	Res  *api.TurnsResult
	Err  string
}

// Fragment is the URL of the turns section alone.
func (v turnsView) Fragment() string {
	u := hpath(v.Name) + "?fragment=turns"
	if v.Run != 0 {
		u += "&run=" + strconv.FormatUint(v.Run, 10)
	}
	return u
}

// turnsOnPage is how many turns a page shows, the newest.
const turnsOnPage = api.DefaultTurns

// turns reads the conversation of run (0: the current run, else the last
// one) through the turns op. A refusal that only says there is nothing to
// read yet (no run, no transcript) is shown as such; any other error too,
// as a line in the section rather than hiding the page.
func (s *Server) turns(ctx context.Context, name string, run uint64) *turnsView {
	v := &turnsView{Name: name, Run: run}
	var res api.TurnsResult
	if err := s.call(ctx, api.OpTurns, api.TurnsArgs{Name: name, Run: run, Limit: turnsOnPage}, &res); err != nil {
		v.Err = err.Error()
		return v
	}
	v.Res = &res
	return v
}

func (s *Server) harness(ctx context.Context, name string) (harnessView, error) {
	var v harnessView
	if err := s.call(ctx, api.OpDescribe, api.NameArg{Name: name}, &v.Unit); err != nil {
		return v, err
	}
	// Runs and calls are part of the page; a failure of one leaves it out
	// with a note rather than hiding the harness.
	var notes []string
	if err := s.call(ctx, api.OpRuns, map[string]any{"name": name, "limit": 10}, &v.Runs); err != nil {
		notes = append(notes, "runs: "+err.Error())
	}
	slices.Reverse(v.Runs) // newest first
	var calls api.CallsResult
	if err := s.call(ctx, api.OpCalls, api.CallsArgs{Harness: name, Limit: 20}, &calls); err == nil {
		v.Calls = calls.Calls
		slices.Reverse(v.Calls)
	}
	v.Notice = strings.Join(notes, "; ")
	v.Terminal = !strings.HasPrefix(name, "mcp.") // upstreams have no terminal
	return v, nil
}

func (s *Server) serveHarness(w http.ResponseWriter, r *http.Request, rq *request, name string) {
	if !rq.may(api.Read) {
		s.fail(w, r, http.StatusForbidden, "this token's grant does not include read")
		return
	}
	q := r.URL.Query()
	var run uint64
	if rs := q.Get("run"); rs != "" {
		n, err := strconv.ParseUint(rs, 10, 64)
		if err != nil || n == 0 {
			s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("run %s: want a run id such as 3", errcode.Quote(rs)))
			return
		}
		run = n
	}
	fragment := q.Get("fragment")
	if fragment == "changes" {
		// The Changes section alone, fetched when the agent finished a turn.
		if err := s.call(r.Context(), api.OpDescribe, api.NameArg{Name: name}, nil); err != nil {
			s.failOp(w, r, err)
			return
		}
		s.render(w, r, http.StatusOK, "harness-changes", s.changesSection(r.Context(), rq, name))
		return
	}
	if fragment == "turns" {
		// The turns section alone, which the page fetches when the agent's
		// state changes: the transcript is read only then.
		var u unitView
		if err := s.call(r.Context(), api.OpDescribe, api.NameArg{Name: name}, &u); err != nil {
			s.failOp(w, r, err)
			return
		}
		v := harnessView{Unit: u, Run: run, Terminal: !strings.HasPrefix(name, "mcp.")}
		if !v.HasTurns() {
			s.fail(w, r, http.StatusNotFound, name+" has no agent transcript to show")
			return
		}
		s.render(w, r, http.StatusOK, "harness-turns", s.turns(r.Context(), name, run))
		return
	}
	v, err := s.harness(r.Context(), name)
	if err != nil {
		s.failOp(w, r, err)
		return
	}
	v.Run = run
	if fragment == "" && v.HasTurns() {
		v.Turns = s.turns(r.Context(), name, run)
	}
	if fragment == "" && v.Terminal {
		v.Changes = s.changesSection(r.Context(), rq, name)
	}
	p := s.newPage(rq, name, v)
	if fragment != "" {
		s.render(w, r, http.StatusOK, "harness-live", p)
		return
	}
	s.render(w, r, http.StatusOK, "harness.html", p)
}

type callsView struct {
	Calls   []api.CallRecord
	Harness string
	Tool    string
	Since   string
	Dropped uint64
}

func (s *Server) serveCalls(w http.ResponseWriter, r *http.Request, rq *request) {
	if !rq.may(api.Read) {
		s.fail(w, r, http.StatusForbidden, "this token's grant does not include read")
		return
	}
	q := r.URL.Query()
	v := callsView{Harness: q.Get("harness"), Tool: q.Get("tool"), Since: q.Get("since")}
	args := api.CallsArgs{Harness: v.Harness, Tool: v.Tool, Limit: 200}
	if v.Since != "" {
		d, err := time.ParseDuration(v.Since)
		if err != nil || d <= 0 {
			s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("since %s: want a duration such as 10m or 2h", errcode.Quote(v.Since)))
			return
		}
		t := s.now().Add(-d)
		args.Since = &t
	}
	var res api.CallsResult
	if err := s.call(r.Context(), api.OpCalls, args, &res); err != nil {
		s.failOp(w, r, err)
		return
	}
	slices.Reverse(res.Calls)
	v.Calls, v.Dropped = res.Calls, res.Dropped
	s.render(w, r, http.StatusOK, "calls.html", s.newPage(rq, "Calls", v))
}

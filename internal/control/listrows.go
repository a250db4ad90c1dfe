package control

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/mask"
	"github.com/harness-dev/harness/internal/supervise"
	"github.com/harness-dev/harness/internal/term"
)

// A list row is made from rowInputs alone (and the clock, for idle_s).
// Most rows of a large fleet do not change between two lists, so the list
// op keeps each unit's row encoded (cachedRow) with the inputs it was made
// from, and encodes it again only when they differ: at 1,000 harnesses
// json.Marshal of the rows was as much of a list as reading the fleet.

// rowInputs is everything a harness's list row is made of but the clock:
// the snapshots its actor, terminal and agent tracker published, its
// configuration table, the masker's generation, and what the list worked
// out for it (next firing, hold). The snapshots are immutable, so equal
// pointers are equal contents.
type rowInputs struct {
	tables  *unitTables
	status  *supervise.Status
	agent   *supervise.AgentStatus // nil before the first view
	act     term.Activity          // zero without a terminal
	hasTerm bool
	mask    uint64 // Masker.Generation before the row masked anything
	next    time.Time
	hasNext bool
	hold    *api.Hold // as shown: nil when the row shows none
}

// same reports whether a and b make the same row. Times compare with ==:
// equal time.Time values encode alike (same instant, same location).
func (a rowInputs) same(b rowInputs) bool {
	return a.tables == b.tables && a.status == b.status && a.agent == b.agent &&
		a.act == b.act && a.hasTerm == b.hasTerm && a.mask == b.mask &&
		a.next == b.next && a.hasNext == b.hasNext && sameShownHold(a.hold, b.hold)
}

// sameShownHold is hold.Same but for the bytes: Until compares with ==,
// so a hold whose until moved to another location is encoded again.
func sameShownHold(a, b *api.Hold) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Reason != b.Reason || a.Note != b.Note || (a.Until == nil) != (b.Until == nil) {
		return false
	}
	return a.Until == nil || *a.Until == *b.Until
}

// rowInputsOf reads u's inputs at now; ac counts the fleet's running
// agents once per list (holdCounting). The masker's generation is read
// before anything is masked (Masker.Generation).
func (c *Control) rowInputsOf(u *unit, now time.Time, ac *agentCount) rowInputs {
	in := rowInputs{
		mask:   c.Masker().Generation(),
		tables: u.tables.Load(),
		status: u.sup.StatusSnapshot(),
		agent:  u.sup.AgentSnapshot(),
	}
	if t := u.sup.Term(); t != nil {
		in.act, in.hasTerm = t.Activity(), true
	}
	if h := in.harness(); h != nil && h.Schedule != "" {
		in.next, in.hasNext = c.sched.Next(u.name)
	}
	if h := c.holdCounting(u, now, ac); h != nil && (!isActive(in.status.State) || h.Reason == api.HoldHours) {
		in.hold = h
	}
	return in
}

func (in rowInputs) harness() *config.Harness {
	if in.tables == nil {
		return nil
	}
	return in.tables.h
}

// row is u's list row at now, masked by m (of generation in.mask or later).
func (in rowInputs) row(name string, m *mask.Masker, now time.Time) api.UnitInfo {
	st := in.status
	ui := api.UnitInfo{
		Name:         name,
		State:        string(st.State),
		Enabled:      st.Enabled,
		PID:          st.PID,
		RestartCount: st.RestartCount,
		Hold:         in.hold,
	}
	if st.LastExitCode != nil {
		code := *st.LastExitCode // the snapshot is shared: the row gets its own
		ui.LastExitCode = &code
	}
	if in.hasNext {
		next := in.next
		ui.NextFire = &next
	}
	h := in.harness()
	if h != nil {
		ui.Description, ui.Project, ui.Schedule = h.Description, h.Project, h.Schedule
	}
	if in.tables != nil && in.tables.up != nil {
		ui.Project = in.tables.up.Project
	}
	if in.hasTerm && st.HasRun() {
		state, idle, since := activityView(in.act, now)
		ui.Activity, ui.IdleS, ui.IdleSince = state, &idle, since
	}
	if h != nil {
		withAgent(&ui, h.Agent, st, in.agent, m)
	}
	return ui
}

// info is u's list row now, as describe shows it.
func (c *Control) info(u *unit) (api.UnitInfo, rowInputs) {
	now := time.Now()
	in := c.rowInputsOf(u, now, &agentCount{c: c})
	return in.row(u.name, c.Masker(), now), in
}

// listed is every harness of project ("" for all), sorted by name, or of
// the project whose file is a.ProjectPath.
func (c *Control) listed(a api.ListArgs) ([]*unit, error) {
	if a.ProjectPath != "" {
		c.mu.RLock()
		for name, p := range c.projects {
			if config.SameFile(p.Path, a.ProjectPath) {
				a.Project = name
			}
		}
		c.mu.RUnlock()
		if a.Project == "" {
			return nil, errcode.Errorf(errcode.InvalidArgument, "no project is up from %s (run harness up there)", a.ProjectPath)
		}
	}
	us := c.harnesses()
	if a.Project == "" {
		return us, nil
	}
	out := us[:0]
	for _, u := range us {
		if u.project == a.Project {
			out = append(out, u)
		}
	}
	return out, nil
}

// List returns the rows of `list` as values, each made afresh: every
// harness sorted by name, or only those of a project given by name or by
// file. The op answers the same rows encoded, from the row cache
// (listAnswer).
func (c *Control) List(_ context.Context, a api.ListArgs) ([]api.UnitInfo, error) {
	return c.rowsAt(a, time.Now())
}

// rowsAt is List at now.
func (c *Control) rowsAt(a api.ListArgs, now time.Time) ([]api.UnitInfo, error) {
	us, err := c.listed(a)
	if err != nil {
		return nil, err
	}
	ac, m := &agentCount{c: c}, c.Masker()
	out := make([]api.UnitInfo, 0, len(us))
	for _, u := range us {
		out = append(out, c.rowInputsOf(u, now, ac).row(u.name, m, now))
	}
	return out, nil
}

// listAnswer answers the list op: List's rows, each encoded again only
// when its inputs changed since the last list that encoded it.
func (c *Control) listAnswer(_ context.Context, a api.ListArgs) (listing, error) {
	return c.listingAt(a, time.Now())
}

// listingAt is listAnswer at now.
func (c *Control) listingAt(a api.ListArgs, now time.Time) (listing, error) {
	us, err := c.listed(a)
	if err != nil {
		return listing{}, err
	}
	ac, m := &agentCount{c: c}, c.Masker()
	l := listing{rows: make([]*cachedRow, len(us)), idle: make([]float64, len(us))}
	for i, u := range us {
		in := c.rowInputsOf(u, now, ac)
		r := u.row.Load()
		if r == nil || !r.in.same(in) {
			if r, err = encodeRow(in, in.row(u.name, m, now)); err != nil {
				return listing{}, errcode.Errorf(errcode.Internal, "list: row of %s: %v", u.name, err)
			}
			u.row.Store(r)
		}
		l.rows[i] = r
		if r.idle {
			l.idle[i] = idleSeconds(in.act, now)
		}
	}
	return l, nil
}

// cachedRow is one harness's list row encoded as json.Marshal encodes it,
// and the inputs it was made from. A row with idle time is cut around its
// value: head ends with `"idle_s":`, tail is what follows the number.
type cachedRow struct {
	in         rowInputs
	head, tail []byte
	idle       bool
}

// idleMark stands for idle_s while a row is encoded, to find where its
// value goes: no idle time is negative, and a string's quote is escaped,
// so `"idle_s":-1234567.875` is only ever the key and the mark.
const idleMark = -1234567.875

var idleMarked = []byte(`"idle_s":-1234567.875`)

func encodeRow(in rowInputs, ui api.UnitInfo) (*cachedRow, error) {
	r := &cachedRow{in: in, idle: ui.IdleS != nil}
	if r.idle {
		mark := idleMark
		ui.IdleS = &mark
	}
	b, err := json.Marshal(ui)
	if err != nil {
		return nil, err
	}
	if !r.idle {
		r.head = b
		return r, nil
	}
	i := bytes.Index(b, idleMarked)
	if i < 0 {
		return nil, errcode.Errorf(errcode.Internal, "idle_s mark not found in %s", b)
	}
	head := i + len(`"idle_s":`)
	r.head, r.tail = b[:head:head], b[i+len(idleMarked):]
	return r, nil
}

// listing is a list answer: its rows as cached, and each row's idle time
// at the time of the list. It marshals as the []api.UnitInfo it stands
// for, byte for byte.
type listing struct {
	rows []*cachedRow
	idle []float64 // idle_s of rows[i], for a row with idle time
}

// AppendJSON appends the answer's JSON to b (protocol.JSONAppender,
// which appends into its pooled frame buffer: after the first list it has
// the room).
func (l listing) AppendJSON(b []byte) []byte {
	b = append(b, '[')
	for i, r := range l.rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r.head...)
		if r.idle {
			b = appendSeconds(b, l.idle[i])
			b = append(b, r.tail...)
		}
	}
	return append(b, ']')
}

// MarshalJSON is AppendJSON for json.Marshal (the MCP and web doors).
func (l listing) MarshalJSON() ([]byte, error) {
	n := 2
	for _, r := range l.rows {
		n += 1 + len(r.head) + len(r.tail) + 24 // a comma, and room for idle_s
	}
	return l.AppendJSON(make([]byte, 0, n)), nil
}

// appendSeconds appends s as encoding/json writes a float64. Its 'f' form
// covers every idle time (0, or at least a millisecond, roundS); the rest
// goes through json.Marshal to stay exact.
func appendSeconds(b []byte, s float64) []byte {
	if a := math.Abs(s); a == 0 || (a >= 1e-6 && a < 1e21) {
		return strconv.AppendFloat(b, s, 'f', -1, 64)
	}
	j, _ := json.Marshal(s) // a finite float always marshals
	return append(b, j...)
}

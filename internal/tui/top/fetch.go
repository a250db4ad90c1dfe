package top

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// Backend is what the dashboard needs of the daemon. *client.Client is
// one: its calls are safe to run concurrently, which the model's commands
// do.
type Backend interface {
	Call(ctx context.Context, op string, args, result any) error
	// DroppedEvents counts events the subscription lost to a full queue;
	// when it grows the model re-lists, since it cannot know what changed.
	DroppedEvents() uint64
}

// Messages: what commands hand back to Update. Each answer carries the
// sequence number its request was issued with, so an older answer never
// overwrites a newer one.
type (
	eventMsg         struct{ ev api.Event }
	eventsClosedMsg  struct{}
	flushMsg         struct{}
	upstreamRetryMsg struct{}
	clockMsg         struct{}
	pollMsg          struct {
		which paneKind
		gen   uint64
	}
	fireMsg struct{ at time.Time }

	listMsg struct {
		seq   uint64
		units []unitRow
		err   error
	}
	unitMsg struct {
		seq  uint64
		name string
		unit *unitRow // nil when the daemon no longer knows the unit
		err  error
	}
	upstreamsMsg struct {
		seq uint64
		ups []api.UpstreamStatus
		err error
	}
	// paneMsg is new text for the preview or the logs view of unit.
	paneMsg struct {
		which   paneKind
		gen     uint64
		unit    string
		lines   []string
		lastID  uint64 // newest entry id in lines (logs); 0 otherwise
		replace bool   // lines are the whole text, not an addition
		err     error
	}
	runsMsg struct {
		gen  uint64
		unit string
		runs []api.Run
		err  error
	}
	// doneMsg reports an operation the user asked for.
	doneMsg struct {
		op, unit string
		text     string // what it did, for the status line
		err      error
	}
)

// call runs one operation with the model's call timeout.
func (m *Model) call(op string, args, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), m.o.CallTimeout)
	defer cancel()
	return m.o.Backend.Call(ctx, op, args, result)
}

// waitEvent delivers the next event of the subscription, or says it ended.
func waitEvent(ch <-chan api.Event) tea.Cmd {
	return func() tea.Msg {
		ev, ok := <-ch
		if !ok {
			return eventsClosedMsg{}
		}
		return eventMsg{ev}
	}
}

func (m *Model) nextSeq() uint64 { m.seq++; return m.seq }

func (m *Model) fetchList() tea.Cmd {
	seq := m.nextSeq()
	return func() tea.Msg {
		var us []unitRow
		err := m.call(api.OpList, api.ListArgs{}, &us)
		now := m.o.Now()
		for i := range us {
			us[i].fetched = now
		}
		return listMsg{seq: seq, units: us, err: err}
	}
}

// fetchUnit refreshes one harness with `describe`, whose answer carries
// every list field (api.Description embeds api.UnitInfo).
func (m *Model) fetchUnit(name string) tea.Cmd {
	seq := m.nextSeq()
	return func() tea.Msg {
		var u unitRow
		err := m.call(api.OpDescribe, api.NameArg{Name: name}, &u)
		if errors.Is(err, errcode.ErrUnknownHarness) {
			return unitMsg{seq: seq, name: name}
		}
		if err != nil {
			return unitMsg{seq: seq, name: name, err: err}
		}
		u.fetched = m.o.Now()
		return unitMsg{seq: seq, name: name, unit: &u}
	}
}

func (m *Model) fetchUpstreams() tea.Cmd {
	seq := m.nextSeq()
	return func() tea.Msg {
		var ups []api.UpstreamStatus
		err := m.call(api.OpMCPStatus, api.NoArgs{}, &ups)
		return upstreamsMsg{seq: seq, ups: ups, err: err}
	}
}

// fetchEntries reads activity entries of unit for a pane: the newest n
// without a cursor, else those after it.
func (m *Model) fetchEntries(which paneKind, gen uint64, unit string, after uint64, n int) tea.Cmd {
	return func() tea.Msg {
		a := api.LogsArgs{Name: unit, Format: api.LogsSummaryFormat, Lines: n}
		if after > 0 {
			a.Cursor = &after
			a.Lines = 0
		}
		var s api.LogsSummary
		if err := m.call(api.OpLogs, a, &s); err != nil {
			return paneMsg{which: which, gen: gen, unit: unit, err: err}
		}
		lines := make([]string, 0, len(s.Entries))
		var last uint64
		for _, e := range s.Entries {
			if e.ID <= after {
				continue
			}
			lines = append(lines, entryLine(e))
			last = e.ID
		}
		return paneMsg{which: which, gen: gen, unit: unit, lines: lines, lastID: last, replace: after == 0}
	}
}

// entryLine is an activity entry as the panes show it, like `harness
// logs` prints it: the time, then the text; lifecycle events marked "-- ".
func entryLine(e api.LogEntry) string {
	prefix := ""
	if e.Kind == api.EntryEvent {
		prefix = "-- "
	}
	return e.Time.Local().Format("15:04:05") + " " + prefix + e.Text
}

func (m *Model) fetchRuns(gen uint64, unit string) tea.Cmd {
	return func() tea.Msg {
		var rs []api.Run
		err := m.call(api.OpRuns, api.RunsArgs{Name: unit, Limit: maxRuns}, &rs)
		return runsMsg{gen: gen, unit: unit, runs: rs, err: err}
	}
}

// doAction runs start, stop or restart on one unit, as `harness OP NAME`
// does, and says what happened.
func (m *Model) doAction(op, unit string) tea.Cmd {
	return func() tea.Msg {
		var res api.ActionResult
		if err := m.call(op, api.NamesArgs{Names: []string{unit}}, &res); err != nil {
			return doneMsg{op: op, unit: unit, err: err}
		}
		var parts []string
		for _, r := range res.Results {
			switch {
			case r.Error != "":
				return doneMsg{op: op, unit: unit, err: fmt.Errorf("%s: %s", r.Name, r.Error)}
			case r.Changed:
				parts = append(parts, r.Name+": "+r.State)
			default:
				parts = append(parts, r.Name+": already "+r.State)
			}
		}
		return doneMsg{op: op, unit: unit, text: op + " " + strings.Join(parts, ", ")}
	}
}

func (m *Model) doTrigger(unit string) tea.Cmd {
	return func() tea.Msg {
		var res api.TriggerResult
		if err := m.call(api.OpTrigger, api.TriggerArgs{Name: unit}, &res); err != nil {
			return doneMsg{op: api.OpTrigger, unit: unit, err: err}
		}
		text := fmt.Sprintf("trigger %s: run %d started", res.Name, res.RunID)
		if res.Skipped {
			text = fmt.Sprintf("trigger %s: skipped, run %d is still active", res.Name, res.ActiveRun)
		}
		return doneMsg{op: api.OpTrigger, unit: unit, text: text}
	}
}

func (m *Model) doReload() tea.Cmd {
	return func() tea.Msg {
		var res api.ReloadResult
		if err := m.call(api.OpReload, api.NoArgs{}, &res); err != nil {
			return doneMsg{op: api.OpReload, err: err}
		}
		text := fmt.Sprintf("reloaded: %d added, %d removed, %d changed", len(res.Added), len(res.Removed), len(res.Changed))
		if len(res.Warnings) > 0 {
			text += "; warning: " + strings.Join(res.Warnings, "; ")
		}
		return doneMsg{op: api.OpReload, text: text}
	}
}

// doSend types a line into unit through Options.Send.
func (m *Model) doSend(unit, line string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), m.o.CallTimeout)
		defer cancel()
		if err := m.o.Send(ctx, unit, line); err != nil {
			return doneMsg{op: "send", unit: unit, err: err}
		}
		return doneMsg{op: "send", unit: unit, text: fmt.Sprintf("sent %d bytes to %s", len(line)+1, unit)}
	}
}

// errText is a refusal as the status line shows it: the daemon's code and
// its message, or the local error.
func errText(err error) string {
	var r *errcode.Remote
	if errors.As(err, &r) {
		return string(r.Code) + ": " + r.Message
	}
	return err.Error()
}

// lostDaemon reports whether err means the connection to the daemon is gone.
func lostDaemon(err error) bool {
	return errors.Is(err, errcode.ErrDaemonUnavailable)
}

package web

import (
	"html/template"
	"strconv"
	"strings"
)

// fleetRows writes the rows of one group of the fleet table. The template
// did this per row, but html/template reaches each field and method by
// reflection (through the embedded api.UnitInfo, by name, on every row):
// 50 ms of a 1,000-row page's 60 ms. Every value is escaped for HTML, and
// every attribute is quoted, so escaping text is escaping attributes.
func fleetRows(units []unitView, write bool) template.HTML {
	var b strings.Builder
	b.Grow(len(units) * 480)
	esc := func(s string) { template.HTMLEscape(&builderWriter{&b}, []byte(s)) }
	for _, u := range units {
		waiting := u.Waiting()
		b.WriteString(`<tr class="unit`)
		if waiting {
			b.WriteString(` is-waiting`)
		}
		b.WriteString(`" data-name="`)
		esc(u.Name)
		b.WriteString(`" data-state="`)
		esc(u.State)
		b.WriteString(`" data-filter="`)
		esc(u.Name + " " + u.State + " " + u.Project + " " + u.AgentState + " " + u.Activity + " " + u.Description)
		h := hpath(u.Name)
		b.WriteString("\">\n<td class=\"name\"><a href=\"")
		esc(h)
		b.WriteString(`">`)
		esc(u.Name)
		b.WriteString(`</a>`)
		if u.Description != "" {
			b.WriteString(`<div class="desc">`)
			esc(u.Description)
			b.WriteString(`</div>`)
		}
		b.WriteString(`</td><td class="state"><span class="badge st-`)
		esc(u.State)
		b.WriteString(`">`)
		esc(u.State)
		b.WriteString(`</span>`)
		if t := u.HoldText(); t != "" {
			b.WriteString(` <span class="badge hold" title="hold">⏸ `)
			esc(t)
			b.WriteString(`</span>`)
		}
		b.WriteString(`</td><td class="agent">`)
		if u.AgentState != "" {
			b.WriteString(`<span class="badge ag-`)
			esc(u.AgentState)
			b.WriteString(`">`)
			esc(u.AgentState)
			b.WriteString(`</span>`)
		}
		if waiting {
			b.WriteString(`<div class="prompt">`)
			if u.Prompt != "" {
				esc(u.Prompt)
			} else {
				esc(u.WaitingFor)
			}
			b.WriteString(`</div>`)
		}
		b.WriteString(`</td><td class="activity">`)
		esc(u.Activity)
		if u.IdleSince != nil {
			b.WriteString(` <span class="dim">`)
			esc(ago(u.IdleSince))
			b.WriteString(`</span>`)
		}
		b.WriteString(`</td><td class="num restarts">`)
		b.WriteString(strconv.Itoa(u.RestartCount))
		b.WriteString(`</td><td class="next">`)
		esc(until(u.NextFire))
		b.WriteString(`</td><td class="actions">`)
		if write {
			if u.State == "running" || u.State == "starting" {
				actButton(&b, esc, h, "stop")
				b.WriteByte(' ')
				actButton(&b, esc, h, "restart")
			} else {
				actButton(&b, esc, h, "start")
			}
			if u.Schedule != "" {
				b.WriteByte(' ')
				actButton(&b, esc, h, "trigger")
			}
		}
		b.WriteString("</td></tr>\n")
	}
	return template.HTML(b.String()) //nolint:gosec // every value above is escaped
}

// actButton is one row's action: a button of the page's one action form
// (fleet.html's #acts) posting to the harness's path.
func actButton(b *strings.Builder, esc func(string), h, act string) {
	b.WriteString(`<button class="act" form="acts" formaction="`)
	esc(h + "/" + act)
	b.WriteString(`" data-act="`)
	b.WriteString(act)
	b.WriteString(`">`)
	b.WriteString(act)
	b.WriteString(`</button>`)
}

// builderWriter lets template.HTMLEscape write into a strings.Builder.
type builderWriter struct{ b *strings.Builder }

func (w *builderWriter) Write(p []byte) (int, error) { return w.b.Write(p) }

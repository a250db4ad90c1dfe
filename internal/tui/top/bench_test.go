package top

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// BenchmarkFrame is one frame of the dashboard with 200 harnesses (and
// two upstreams): a changed unit's describe answer applied, the rows
// grouped and sorted again, and the screen drawn, at 80x24 and 120x40.
// In the same run it times the baseline, `harness list`'s table of the
// same 200 rows (text/tabwriter, as cmd/harness prints it), and reports
// frame / baseline as x_list_table. The terminal's own drawing is
// bubbletea's and is not in here: see part 4 of the bench for the whole
// process.
func BenchmarkFrame(b *testing.B) {
	f := newFakeDaemon()
	for i := range 200 {
		u := f.addUnit(fmt.Sprintf("p%d/agent-%03d", i%4, i), []string{"running", "stopped"}[i%2])
		u.Description = "an agent of the bench fleet"
		u.PID = 1000 + i
	}
	f.ups = []api.UpstreamStatus{{Key: "gitea", State: "running", Tools: 12}, {Key: "db", State: "running", Tools: 3}}
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		b.Run(fmt.Sprintf("200_harnesses_%dx%d", size[0], size[1]), func(b *testing.B) {
			d := newDriver(b, f, size[0], size[1], nil)
			d.advance(selectDelay)
			rows := make([]unitRow, 0, 200)
			for _, u := range d.m.units {
				rows = append(rows, *u)
			}
			// Frame and baseline alternate, so that load from elsewhere on
			// a shared machine falls on both alike.
			var frame, base time.Duration
			b.ResetTimer()
			for i := range b.N {
				u := rows[i%len(rows)]
				u.RestartCount = i
				t0 := time.Now()
				d.m.Update(unitMsg{seq: d.m.seq + uint64(i) + 1, name: u.Name, unit: &u})
				if len(d.m.Render()) == 0 {
					b.Fatal("empty frame")
				}
				t1 := time.Now()
				listTable(io.Discard, rows)
				frame, base = frame+t1.Sub(t0), base+time.Since(t1)
			}
			b.ReportMetric(float64(frame.Nanoseconds())/float64(b.N), "ns/frame")
			b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "ns/list_table")
			b.ReportMetric(float64(frame)/float64(base), "x_list_table")
		})
	}
}

// listTable prints rows as `harness list` does (cmd/harness's table).
func listTable(w io.Writer, units []unitRow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tENABLED\tPID\tRESTARTS\tEXIT\tSCHEDULE\tDESCRIPTION")
	for _, u := range units {
		exit := "-"
		if u.LastExitCode != nil {
			exit = strconv.Itoa(*u.LastExitCode)
		}
		fmt.Fprintln(tw, strings.Join([]string{u.Name, u.State, strconv.FormatBool(u.Enabled), strconv.Itoa(u.PID),
			strconv.Itoa(u.RestartCount), exit, u.Schedule, u.Description}, "\t"))
	}
	tw.Flush()
}

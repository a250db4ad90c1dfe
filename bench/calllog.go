package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/calllog"
	"github.com/harness-dev/harness/internal/mcp/session"
)

// logVariant is one way of running the call log in part 4.
type logVariant struct {
	name string
	log  *calllog.Log // nil: no call log
	sess *mcp.ClientSession
	lat  []time.Duration // client round trips
	cpu  time.Duration   // this process's CPU time while measuring

	timing  atomic.Bool
	mu      sync.Mutex
	handled []time.Duration // server side: from the request's arrival at the session's middleware to its answer
}

// timeHandling records how long the session's own handling of each
// tools/call takes (the call log's hook included), outside the transports.
func (v *logVariant) timeHandling(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		t0 := time.Now()
		res, err := next(ctx, method, req)
		if d := time.Since(t0); method == "tools/call" && v.timing.Load() {
			v.mu.Lock()
			v.handled = append(v.handled, d)
			v.mu.Unlock()
		}
		return res, err
	}
}

// logBatch is how many calls a variant makes before the next one's turn:
// small, so that load from elsewhere on the machine falls on all alike.
const logBatch = 100

// runCallLog is part 4: what the call log adds to a call. It serves MCP
// sessions in this process (session.Manager, the go-sdk on in-memory
// transports, a stub operation behind harness_logs) so the hook's cost is
// not lost in the noise of processes and sockets, and measures the same
// call with the log off, on, and on with call_log_args, in interleaved
// batches. Each call is timed twice: the client's round trip, and the
// session's handling of it (an outermost middleware on the session's
// server), which is where the hook runs. The log writes to a real file
// under tmp with its writer running, so its CPU competes for the cores.
func runCallLog(ctx context.Context, o options, tmp string, rep *report) error {
	variants := []*logVariant{{name: "off"}, {name: "on"}, {name: "on, call_log_args"}}
	for i, v := range variants[1:] {
		l, err := calllog.Open(filepath.Join(tmp, fmt.Sprintf("calls-%d", i)), calllog.Options{})
		if err != nil {
			return err
		}
		defer l.Close()
		l.SetKeepArgs(i == 1)
		v.log = l
	}
	for _, v := range variants {
		m := session.NewManager(benchOps{}, benchAuth{}, nil, nil, nil, "bench")
		defer m.Close()
		if v.log != nil {
			m.SetCallRecorder(v.log)
		}
		st, ct := mcp.NewInMemoryTransports()
		srv := m.NewServer(session.Identity{AllowControl: true})
		srv.AddReceivingMiddleware(v.timeHandling)
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			return err
		}
		defer ss.Close()
		if v.sess, err = mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil); err != nil {
			return err
		}
		defer v.sess.Close()
		if _, err := timedCalls(ctx, v.sess, logTool, logArgs, o.Warmup*10); err != nil {
			return fmt.Errorf("call log %s: warm-up: %w", v.name, err)
		}
	}
	o.progress("part 4: %d rounds of %d calls per variant, in batches of %d", o.Rounds, o.LogCalls, logBatch)
	for _, v := range variants {
		v.timing.Store(true)
	}
	for b := range o.Rounds * max(o.LogCalls/logBatch, 1) {
		for i := range variants {
			v := variants[(i+b)%len(variants)]
			before := selfCPU()
			lat, err := timedCalls(ctx, v.sess, logTool, logArgs, min(logBatch, o.LogCalls))
			if err != nil {
				return fmt.Errorf("call log %s: %w", v.name, err)
			}
			v.cpu += selfCPU() - before
			v.lat = append(v.lat, lat...)
		}
	}
	off, offH := summarize(variants[0].lat), summarize(variants[0].handling())
	for _, v := range variants {
		s, h := summarize(v.lat), summarize(v.handling())
		extra := ""
		if v.log != nil {
			extra = fmt.Sprintf("; written %d, dropped %d", v.log.Written(), v.log.Dropped())
		}
		rep.metric("4", "`harness_logs` in process, call log "+v.name,
			"handling p50 %s (%s over off), p99 %s; round trip p50 %s (%s over off), p99 %s; CPU per call %s; %d calls%s",
			ns(h.P50), ns(h.P50-offH.P50), ns(h.P99), us(s.P50), us(s.P50-off.P50), us(s.P99),
			us(v.cpu/time.Duration(max(len(v.lat), 1))), s.N, extra)
	}
	onH, argsH := summarize(variants[1].handling()), summarize(variants[2].handling())
	on := summarize(variants[1].lat)
	over := onH.P50 - offH.P50
	rep.target("(4) call log overhead per call at p50 (on - off, same run) <= 10 µs", over <= 10*time.Microsecond,
		"%s in the session's handling (off %s, on %s; with call_log_args %s over off); round trip %s over off",
		ns(over), ns(offH.P50), ns(onH.P50), ns(argsH.P50-offH.P50), us(on.P50-off.P50))
	return nil
}

const logTool = "harness_logs"

// logArgs are the arguments of every part 4 call, as an agent reading a
// harness's log would send them.
var logArgs = map[string]any{"name": "reviewer", "lines": 20, "format": "summary"}

func (v *logVariant) handling() []time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.handled)
}

// ns formats a short duration in microseconds with a decimal.
func ns(d time.Duration) string {
	return fmt.Sprintf("%.1f µs", float64(d)/1e3)
}

// timedCalls makes n sequential calls of tool with args on s and returns
// their latencies; a failed call or a tool error ends it.
func timedCalls(ctx context.Context, s *mcp.ClientSession, tool string, args any, n int) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		el := time.Since(t0)
		if err == nil && res.IsError {
			err = fmt.Errorf("%s: tool error: %+v", tool, res.Content)
		}
		if err != nil {
			return nil, err
		}
		lat = append(lat, el)
	}
	return lat, nil
}

// benchOps answers every operation with a small log summary.
type benchOps struct{}

var benchEntries = func() []api.LogEntry {
	out := make([]api.LogEntry, 5)
	for i := range out {
		out[i] = api.LogEntry{ID: uint64(i + 1), Time: time.Unix(1700000000, 0), Kind: api.EntryOutput, RunID: 3,
			Text: "reviewing the change set: looks fine so far"}
	}
	return out
}()

func (benchOps) Call(context.Context, api.Caller, string, json.RawMessage) (any, error) {
	return api.LogsSummary{Format: api.LogsSummaryFormat, Entries: benchEntries, NextCursor: 5}, nil
}

// benchAuth knows no tokens: the bench's session is unattributed.
type benchAuth struct{}

func (benchAuth) ResolveToken(string) (string, bool) { return "", false }
func (benchAuth) Grant(string) (api.Grant, bool)     { return api.Grant{}, false }
func (benchAuth) OperatorGrant() api.Grant           { return api.DefaultGrant() }
func (benchAuth) Project(string) string              { return "" }

// selfCPU is this process's user + system time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fmt.Fprintln(os.Stderr, "bench: getrusage:", err)
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

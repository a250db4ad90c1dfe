package calllog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitFor bounds every wait on an event. It is only reached when a test
// fails: the writer decoding and masking 16 MiB of queued arguments took
// over 10 s under -race on a loaded 2-core CI machine (2.5 s alone).
const waitFor = 60 * time.Second

func rec(harness, tool, outcome string, ms float64) api.CallRecord {
	r := api.CallRecord{
		Time: time.Now(), Session: "s1", Transport: api.TransportSocket, Caller: api.CallerUnattributed,
		Kind: api.CallTool, Tool: tool, Outcome: outcome, DurationMS: ms, RequestBytes: 2, ResponseBytes: 10,
	}
	if harness != "" {
		r.Caller, r.Harness, r.RunID = api.CallerHarness, harness, 7
	}
	return r
}

func openLog(t *testing.T, dir string, opt Options) *Log {
	t.Helper()
	l, err := Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// waitWritten waits until n records are on disk, on the log's own signal.
func waitWritten(t *testing.T, l *Log, n uint64) {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		ch := l.Changed()
		if l.Written() >= n {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("written %d of %d records", l.Written(), n)
		}
	}
}

func query(t *testing.T, l *Log, a api.CallsArgs) api.CallsResult {
	t.Helper()
	res, err := l.Query(context.Background(), a)
	if err != nil {
		t.Fatalf("query %+v: %v", a, err)
	}
	return res
}

func ids(rs []api.CallRecord) []uint64 {
	out := []uint64{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func tools(rs []api.CallRecord) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.Tool)
	}
	return out
}

func seed(t *testing.T, l *Log) {
	t.Helper()
	for _, r := range []api.CallRecord{
		rec("a", "harness_list", api.OutcomeOK, 1),
		rec("b", "git__status", api.OutcomeOK, 2),
		rec("a", "harness_stop", string(errcode.NotPermitted), 0.1),
		rec("", "harness_list", api.OutcomeOK, 1),
		rec("b", "git__push", api.OutcomeToolError, 30),
	} {
		l.Record(r)
	}
	waitWritten(t, l, 5)
}

func TestQueryFiltersAndCursors(t *testing.T) {
	for _, ringSize := range []int{1, DefaultRing} { // from the files, from memory
		t.Run(fmt.Sprintf("ring %d", ringSize), func(t *testing.T) {
			l := openLog(t, t.TempDir(), Options{Ring: ringSize})
			seed(t, l)
			all := query(t, l, api.CallsArgs{})
			if got := ids(all.Calls); !slices.Equal(got, []uint64{1, 2, 3, 4, 5}) || all.NextCursor != 5 {
				t.Fatalf("all: ids %v next %d", got, all.NextCursor)
			}
			if got := tools(query(t, l, api.CallsArgs{Harness: "a"}).Calls); !slices.Equal(got, []string{"harness_list", "harness_stop"}) {
				t.Errorf("harness a: %v", got)
			}
			if got := tools(query(t, l, api.CallsArgs{Tool: "git__*"}).Calls); !slices.Equal(got, []string{"git__status", "git__push"}) {
				t.Errorf("tool git__*: %v", got)
			}
			if got := ids(query(t, l, api.CallsArgs{Limit: 2}).Calls); !slices.Equal(got, []uint64{4, 5}) {
				t.Errorf("newest 2: %v", got)
			}
			c := uint64(1)
			page := query(t, l, api.CallsArgs{Cursor: &c, Limit: 2})
			if got := ids(page.Calls); !slices.Equal(got, []uint64{2, 3}) || page.NextCursor != 3 {
				t.Errorf("after 1, 2 of them: %v next %d", got, page.NextCursor)
			}
			c = 3
			page = query(t, l, api.CallsArgs{Cursor: &c, Harness: "a"})
			if len(page.Calls) != 0 || page.NextCursor != 5 {
				t.Errorf("nothing of a after 3: %v next %d (want every id considered)", ids(page.Calls), page.NextCursor)
			}
			future := time.Now().Add(time.Hour)
			if got := query(t, l, api.CallsArgs{Since: &future}); len(got.Calls) != 0 {
				t.Errorf("since the future: %v", ids(got.Calls))
			}
			c = 99
			if got := query(t, l, api.CallsArgs{Cursor: &c}); got.NextCursor != 5 {
				t.Errorf("a cursor past the newest record: next %d, want 5", got.NextCursor)
			}
		})
	}
}

func TestQueryRefusesBadArguments(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	c := uint64(0)
	for _, a := range []api.CallsArgs{
		{Tool: "["}, {Limit: -1}, {Limit: MaxLimit + 1}, {WaitS: 1}, {Cursor: &c, WaitS: 61}, {Cursor: &c, WaitS: -1},
	} {
		if _, err := l.Query(context.Background(), a); !errors.Is(err, errcode.ErrInvalidArgument) {
			t.Errorf("%+v: %v, want invalid_argument", a, err)
		}
	}
}

func TestRecordsSurviveReopenAndIDsKeepGrowing(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	seed(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, Options{})
	l.Record(rec("c", "harness_runs", api.OutcomeOK, 1))
	waitWritten(t, l, 1)
	got := query(t, l, api.CallsArgs{})
	if !slices.Equal(ids(got.Calls), []uint64{1, 2, 3, 4, 5, 6}) || got.Calls[5].Harness != "c" || got.Calls[2].Outcome != "not_permitted" {
		t.Fatalf("after reopen: %+v", got.Calls)
	}
	c := uint64(2)
	if got := ids(query(t, l, api.CallsArgs{Cursor: &c, Harness: "a"}).Calls); !slices.Equal(got, []uint64{3}) {
		t.Errorf("after 2, from the files: %v", got)
	}
}

func TestCloseWritesWhatIsQueued(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 500 {
		l.Record(rec("a", "harness_list", api.OutcomeOK, 1))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l.Record(rec("a", "late", api.OutcomeOK, 1)) // after Close: dropped, not a panic
	l2 := openLog(t, dir, Options{})
	if got := query(t, l2, api.CallsArgs{Limit: MaxLimit}); len(got.Calls) != 500 {
		t.Fatalf("%d records after Close, want 500", len(got.Calls))
	}
}

func TestTruncatedLastLineIsSkipped(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	seed(t, l)
	l.Close()
	// A crash in the middle of a write.
	f, err := os.OpenFile(filepath.Join(dir, CurrentFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"id":6,"time":"2`)
	f.Close()
	l = openLog(t, dir, Options{})
	l.Record(rec("z", "after_crash", api.OutcomeOK, 1))
	waitWritten(t, l, 1)
	got := query(t, l, api.CallsArgs{})
	if !slices.Equal(ids(got.Calls), []uint64{1, 2, 3, 4, 5, 6}) || got.Calls[5].Tool != "after_crash" {
		t.Fatalf("records: %v %v", ids(got.Calls), tools(got.Calls))
	}
}

func TestRotationBoundsTheFiles(t *testing.T) {
	dir := t.TempDir()
	const maxBytes = 4 << 10
	l := openLog(t, dir, Options{MaxFileBytes: maxBytes, KeepFiles: 2, Ring: 8})
	const n = 400
	for i := range n {
		l.Record(rec("a", fmt.Sprintf("tool_%03d", i), api.OutcomeOK, 1))
		if i%50 == 49 {
			waitWritten(t, l, uint64(i+1)) // stay inside the queue
		}
	}
	waitWritten(t, l, n)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		fi, _ := e.Info()
		names = append(names, e.Name())
		if fi.Size() > maxBytes {
			t.Errorf("%s is %d bytes, over %d", e.Name(), fi.Size(), maxBytes)
		}
	}
	if !slices.Equal(names, []string{"calls.1.jsonl", "calls.2.jsonl", "calls.jsonl"}) {
		t.Fatalf("files %v", names)
	}
	got := query(t, l, api.CallsArgs{Limit: MaxLimit})
	if len(got.Calls) == 0 || len(got.Calls) >= n {
		t.Fatalf("%d records kept of %d: the bound did not drop the oldest", len(got.Calls), n)
	}
	for i, r := range got.Calls {
		if r.ID != got.Calls[0].ID+uint64(i) {
			t.Fatalf("ids not contiguous across files: %v", ids(got.Calls))
		}
	}
	if last := got.Calls[len(got.Calls)-1]; last.ID != n || last.Tool != fmt.Sprintf("tool_%03d", n-1) {
		t.Fatalf("newest record %+v", last)
	}
}

// gate is a disk that blocks every write until opened.
type gate struct {
	w    io.Writer
	open chan struct{}
	in   chan struct{}
	once sync.Once
}

func (g *gate) Write(p []byte) (int, error) {
	g.once.Do(func() { close(g.in) })
	<-g.open
	return g.w.Write(p)
}

func TestScenario_SlowDiskNeverDelaysACall(t *testing.T) {
	g := &gate{open: make(chan struct{}), in: make(chan struct{})}
	l, err := open(t.TempDir(), Options{Queue: 16}, func(w io.Writer) io.Writer { g.w = w; return g })
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Record(rec("a", "first", api.OutcomeOK, 1))
	<-g.in // the writer is stuck in the disk
	const n = 1000
	for range n {
		l.Record(rec("a", "harness_list", api.OutcomeOK, 1)) // would hang here if Record waited
	}
	if d := l.Dropped(); d != n-16 {
		t.Fatalf("dropped %d, want %d (the queue holds 16)", d, n-16)
	}
	if res := query(t, l, api.CallsArgs{}); res.Dropped != n-16 {
		t.Errorf("query says dropped %d", res.Dropped)
	}
	if total, _ := l.Stats(nil); total.Calls != n+1 {
		t.Errorf("stats count %d calls: they must count every call, written or not", total.Calls)
	}
	close(g.open)
	waitWritten(t, l, 17)
}

// failing refuses writes while broken is set.
type failing struct {
	mu     sync.Mutex
	w      io.Writer
	broken bool
}

func (f *failing) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken {
		return 0, errors.New("no space left on device")
	}
	return f.w.Write(p)
}

func TestDiskErrorsAreCountedAndTheLogRecovers(t *testing.T) {
	fw := &failing{broken: true}
	l, err := open(t.TempDir(), Options{}, func(w io.Writer) io.Writer { fw.w = w; return fw })
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Record(rec("a", "lost", api.OutcomeOK, 1))
	deadline := time.Now().Add(waitFor)
	for l.Dropped() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("a failed write was not counted")
		}
		time.Sleep(time.Millisecond)
	}
	fw.mu.Lock()
	fw.broken = false
	fw.mu.Unlock()
	l.Record(rec("a", "kept", api.OutcomeOK, 1))
	waitWritten(t, l, 1)
	if got := tools(query(t, l, api.CallsArgs{}).Calls); !slices.Equal(got, []string{"kept"}) {
		t.Fatalf("after recovery: %v", got)
	}
}

func TestFollowWakesOnAppend(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	seed(t, l)
	c := uint64(5)
	type answer struct {
		res api.CallsResult
		err error
		at  time.Time
	}
	done := make(chan answer, 1)
	go func() {
		res, err := l.Query(context.Background(), api.CallsArgs{Cursor: &c, WaitS: 30, Tool: "harness_*"})
		done <- answer{res, err, time.Now()}
	}()
	l.Record(rec("a", "git__status", api.OutcomeOK, 1)) // not a match: keeps waiting
	l.Record(rec("a", "harness_jobs", api.OutcomeOK, 1))
	sent := time.Now()
	select {
	case a := <-done:
		if a.err != nil || !slices.Equal(tools(a.res.Calls), []string{"harness_jobs"}) {
			t.Fatalf("follow: %v %v", tools(a.res.Calls), a.err)
		}
		if lag := a.at.Sub(sent); lag > time.Second {
			t.Errorf("follow saw the call after %s", lag)
		}
	case <-time.After(waitFor):
		t.Fatal("follow did not wake on the append")
	}
	// A follower whose caller goes away returns at once.
	ctx, cancel := context.WithCancel(context.Background())
	c = 7
	go func() {
		res, err := l.Query(ctx, api.CallsArgs{Cursor: &c, WaitS: 30})
		done <- answer{res, err, time.Now()}
	}()
	cancel()
	select {
	case a := <-done:
		if len(a.res.Calls) != 0 || a.res.NextCursor != 7 {
			t.Errorf("cancelled follow: %+v", a.res)
		}
	case <-time.After(waitFor):
		t.Fatal("cancelled follow did not return")
	}
}

func TestArgumentsKeptOnlyWhenAskedAndCut(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{})
	secret := "s3cret-" + strings.Repeat("x", 600)
	r := rec("a", "git__push", api.OutcomeOK, 1)
	r.Args = json.RawMessage(`{"token":"` + secret + `","n":12345678901234567890,"list":["` + secret + `"]}`)
	l.Record(r)
	l.SetKeepArgs(true)
	l.Record(r)
	waitWritten(t, l, 2)
	got := query(t, l, api.CallsArgs{}).Calls
	if got[0].Args != nil {
		t.Errorf("args kept while call_log_args is off: %s", got[0].Args)
	}
	var args struct {
		Token string          `json:"token"`
		N     json.Number     `json:"n"`
		List  []string        `json:"list"`
		More  json.RawMessage `json:"more"`
	}
	if err := json.Unmarshal(got[1].Args, &args); err != nil {
		t.Fatalf("args %s: %v", got[1].Args, err)
	}
	want := secret[:ArgStringBound] + fmt.Sprintf("…(cut, %d bytes)", len(secret))
	if args.Token != want || len(args.List) != 1 || args.List[0] != want || args.N != "12345678901234567890" {
		t.Errorf("cut args: %+v", args)
	}
	b, _ := os.ReadFile(filepath.Join(dir, CurrentFile))
	if strings.Contains(string(b), secret) {
		t.Error("the whole string reached the disk")
	}
}

func TestCutArgs(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{``, ``},
		{`null`, `null`},
		{`{}`, `{}`},
		{`{"a":{"b":["héllo",1.50,true,null]}}`, `{"a":{"b":["héllo",1.50,true,null]}}`},
		{`not json`, `{"_omitted":"arguments are not JSON (8 bytes)"}`},
	} {
		if got := string(cutArgs(json.RawMessage(tt.in), nil)); got != tt.want {
			t.Errorf("cutArgs(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
	// Cut on a rune boundary: 255 ASCII bytes then a two-byte rune.
	s := strings.Repeat("a", 255) + "é" + "tail"
	if got := cutString(s, 256); !strings.HasPrefix(got, strings.Repeat("a", 255)+"…") {
		t.Errorf("cut inside a rune: %q", got[250:])
	}
	many := map[string]string{}
	for i := range 200 {
		many[fmt.Sprint(i)] = strings.Repeat("v", 200)
	}
	b, _ := json.Marshal(many)
	if got := string(cutArgs(b, nil)); !strings.Contains(got, "_omitted") {
		t.Errorf("oversized arguments kept: %d bytes", len(got))
	}
}

func TestQuerySeesEveryCallRecordedBeforeIt(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	for i := range 50 {
		l.Record(rec("a", fmt.Sprintf("t%d", i), api.OutcomeOK, 1))
		// No wait for the writer: the query must not miss a call that a
		// client already has its answer to.
		got := query(t, l, api.CallsArgs{Limit: 1})
		if len(got.Calls) != 1 || got.Calls[0].Tool != fmt.Sprintf("t%d", i) {
			t.Fatalf("after call %d the newest record is %+v", i, got.Calls)
		}
	}
}

func TestMemoryStaysBoundedWhileTheWriterIsBehind(t *testing.T) {
	g := &gate{open: make(chan struct{}), in: make(chan struct{})}
	l, err := open(t.TempDir(), Options{Queue: 64, RingBytes: 8 << 10}, func(w io.Writer) io.Writer { g.w = w; return g })
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.SetKeepArgs(true)
	l.Record(rec("a", "first", api.OutcomeOK, 1))
	<-g.in
	big := json.RawMessage(`{"content":"` + strings.Repeat("x", 1<<20) + `"}`)
	for range 100 {
		r := rec("a", "write_file", api.OutcomeOK, 1)
		r.Args = big
		l.Record(r)
	}
	if queued := l.argBytes.Load(); queued > maxQueuedArgs {
		t.Fatalf("%d argument bytes queued, over %d", queued, maxQueuedArgs)
	}
	close(g.open)
	waitWritten(t, l, 65)
	if queued := l.argBytes.Load(); queued != 0 {
		t.Errorf("%d argument bytes still counted after the queue drained", queued)
	}
	got := query(t, l, api.CallsArgs{Tool: "write_file", Limit: MaxLimit}).Calls
	var cut, noted int
	for _, r := range got {
		switch {
		case strings.Contains(string(r.Args), "cut, 1048576 bytes"):
			cut++
		case strings.Contains(string(r.Args), "the writer is behind"):
			noted++
		}
	}
	if cut == 0 || noted == 0 || cut+noted != len(got) {
		t.Errorf("%d records: %d with cut arguments, %d with a note", len(got), cut, noted)
	}
	l.mu.Lock()
	n, bytes := l.ring.len(), l.ring.bytes
	l.mu.Unlock()
	if bytes > 8<<10 || n == 0 || n >= 65 {
		t.Errorf("ring holds %d records, %d bytes: not bounded by bytes", n, bytes)
	}
	// Past the ring, queries read the files: nothing is missing.
	if all := query(t, l, api.CallsArgs{Limit: MaxLimit}); len(all.Calls) != 65 {
		t.Errorf("%d records, want 65", len(all.Calls))
	}
}

func TestScenario_CutArgsMasksKeysAndValuesBeforeCutting(t *testing.T) {
	mask := func(s string) string { return strings.ReplaceAll(s, "s3cret", "[masked]") }
	long := "s3cret" + strings.Repeat("z", 300)
	in, _ := json.Marshal(map[string]any{"k s3cret": []any{"v s3cret", long}})
	got := string(cutArgs(in, mask))
	if strings.Contains(got, "s3cret") || strings.Count(got, "[masked]") != 3 {
		t.Fatalf("cutArgs = %s", got)
	}
}

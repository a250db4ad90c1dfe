package trajectory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func openT(t *testing.T, dir string, opt Options) *Store {
	t.Helper()
	s, err := Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// feed appends entries with growing ids, like a log's OnEntry hook.
type feed struct {
	t    *testing.T
	s    *Store
	unit string
	id   uint64
}

func (f *feed) add(run uint64, text string) logs.Entry {
	f.t.Helper()
	f.id++
	e := logs.Entry{ID: f.id, Time: time.Unix(int64(f.id), 0).UTC(), Kind: logs.KindOutput, RunID: run, Text: text}
	if err := f.s.Append(f.unit, e); err != nil {
		f.t.Fatal(err)
	}
	return e
}

func texts(es []logs.Entry) string {
	var out []string
	for _, e := range es {
		out = append(out, e.Text)
	}
	return strings.Join(out, ",")
}

func TestRunsGoToTheirOwnFilesAndSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	f := &feed{t: t, s: s, unit: "proj/web"}
	f.add(0, "no run: ignored")
	f.add(1, "a1")
	f.add(1, "a2")
	f.add(2, "b1")
	f.add(1, "a3 (late event of run 1)")

	ms := s.List("proj/web")
	if len(ms) != 2 || ms[0].Run != 1 || ms[0].Entries != 3 || ms[1].Run != 2 || ms[1].Entries != 1 {
		t.Fatalf("list: %+v", ms)
	}
	if ms[0].First.IsZero() || !ms[0].Last.After(ms[0].First) || ms[0].Bytes <= 0 {
		t.Fatalf("meta: %+v", ms[0])
	}
	es, trunc, err := s.Read("proj/web", 1, 0, 0)
	if err != nil || trunc || texts(es) != "a1,a2,a3 (late event of run 1)" {
		t.Fatalf("read run 1: %q %v %v", texts(es), trunc, err)
	}

	// Layout and modes.
	udir := filepath.Join(dir, "proj%2Fweb")
	for path, mode := range map[string]os.FileMode{udir: 0o700 | os.ModeDir, filepath.Join(udir, "1.jsonl"): 0o600} {
		st, err := os.Stat(path)
		if err != nil || st.Mode() != mode {
			t.Fatalf("%s: %v %v, want %v", path, st.Mode(), err, mode)
		}
	}

	// A torn line (crash mid-write) is cut off on the next scan.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Append("proj/web", logs.Entry{ID: 99, RunID: 2}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	fh, err := os.OpenFile(filepath.Join(udir, "2.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString(`{"id":7,"te`)
	fh.Close()

	s2 := openT(t, dir, Options{})
	ms2 := s2.List("proj/web")
	if len(ms2) != 2 || ms2[0].Entries != 3 || ms2[1].Entries != 1 || ms2[1].Bytes != ms[1].Bytes {
		t.Fatalf("after reopen: %+v, before %+v", ms2, ms)
	}
	f2 := &feed{t: t, s: s2, unit: "proj/web", id: f.id}
	f2.add(2, "b2")
	es, _, err = s2.Read("proj/web", 2, 0, 0)
	if err != nil || texts(es) != "b1,b2" {
		t.Fatalf("run 2 after repair: %q %v", texts(es), err)
	}
}

func TestReadPagesByCursorAndBytes(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	f := &feed{t: t, s: s, unit: "u"}
	var all []logs.Entry
	for i := range 10 {
		all = append(all, f.add(5, fmt.Sprintf("line-%d", i)))
	}
	es, trunc, err := s.Read("u", 5, all[6].ID, 0)
	if err != nil || trunc || texts(es) != "line-7,line-8,line-9" {
		t.Fatalf("after cursor: %q %v %v", texts(es), trunc, err)
	}
	// Page through with a small cap: every entry once, in order.
	var got []string
	cursor := uint64(0)
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatal("paging does not end")
		}
		es, trunc, err := s.Read("u", 5, cursor, 200)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, texts(es))
		if len(es) > 0 {
			cursor = es[len(es)-1].ID
		}
		if !trunc {
			break
		}
	}
	if strings.Join(got, ",") != texts(all) || len(got) < 3 {
		t.Fatalf("paged %q, want %q in several pages", got, texts(all))
	}
	// A cap smaller than one entry still progresses.
	if es, trunc, _ := s.Read("u", 5, 0, 1); len(es) != 1 || !trunc {
		t.Fatalf("tiny cap: %d entries, truncated %v", len(es), trunc)
	}
	if es, trunc, err := s.Read("u", 5, all[9].ID, 0); err != nil || trunc || len(es) != 0 || es == nil {
		t.Fatalf("past the end: %v %v %v", es, trunc, err)
	}
	if _, _, err := s.Read("u", 6, 0, 0); !errors.Is(err, errcode.ErrInvalidArgument) {
		t.Fatalf("unknown run: %v", err)
	}
	if _, _, err := s.Read("other", 5, 0, 0); !errors.Is(err, errcode.ErrInvalidArgument) {
		t.Fatalf("unknown unit: %v", err)
	}
}

func TestRetentionDropsOldestRuns(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{MaxRunsPerUnit: 3})
	f := &feed{t: t, s: s, unit: "job"}
	for run := uint64(1); run <= 5; run++ {
		f.add(run, fmt.Sprintf("run %d", run))
	}
	if got := runsOf(s.List("job")); got != "3,4,5" {
		t.Fatalf("kept %s, want 3,4,5", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "job", "2.jsonl")); !os.IsNotExist(err) {
		t.Fatalf("dropped run file still there: %v", err)
	}
	if _, _, err := s.Read("job", 1, 0, 0); !errors.Is(err, errcode.ErrInvalidArgument) {
		t.Fatalf("dropped run: %v", err)
	}
	// Reopen with a smaller bound: the scan applies it at the next append.
	s.Close()
	s2 := openT(t, dir, Options{MaxRunsPerUnit: 2})
	(&feed{t: t, s: s2, unit: "job", id: f.id}).add(6, "run 6")
	if got := runsOf(s2.List("job")); got != "5,6" {
		t.Fatalf("kept %s, want 5,6", got)
	}
}

func TestRetentionByBytes(t *testing.T) {
	s := openT(t, t.TempDir(), Options{MaxBytesPerUnit: 1000})
	f := &feed{t: t, s: s, unit: "big"}
	pad := strings.Repeat("x", 100)
	for run := uint64(1); run <= 3; run++ {
		for range 3 {
			f.add(run, pad)
		}
	}
	ms := s.List("big")
	var total int64
	for _, m := range ms {
		total += m.Bytes
	}
	if total > 1000 || len(ms) == 0 || ms[0].Run == 1 || ms[len(ms)-1].Run != 3 || ms[len(ms)-1].Entries != 3 {
		t.Fatalf("kept %s (%d bytes): %+v", runsOf(ms), total, ms)
	}
	// One run alone past the bound keeps its beginning and says so.
	for range 20 {
		f.add(4, pad)
	}
	ms = s.List("big")
	last := ms[len(ms)-1]
	if runsOf(ms) != "4" || !last.Capped || last.Bytes > 1000 || last.Entries < 5 {
		t.Fatalf("capped run: %+v", ms)
	}
}

func runsOf(ms []Meta) string {
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprint(m.Run))
	}
	return strings.Join(out, ",")
}

// TestConcurrentUnits appends from many units at once while readers list
// and page; run under -race.
func TestConcurrentUnits(t *testing.T) {
	s := openT(t, t.TempDir(), Options{MaxRunsPerUnit: 4})
	const units, perUnit = 8, 300
	var wg sync.WaitGroup
	for u := range units {
		name := fmt.Sprintf("p/u%d", u)
		wg.Go(func() {
			for i := 1; i <= perUnit; i++ {
				e := logs.Entry{ID: uint64(i), Time: time.Now(), Kind: logs.KindOutput, RunID: uint64(1 + i/50), Text: fmt.Sprint(i)}
				if err := s.Append(name, e); err != nil {
					t.Error(err)
					return
				}
			}
		})
		wg.Go(func() {
			for range 50 {
				for _, m := range s.List(name) {
					es, _, err := s.Read(name, m.Run, 0, 512)
					if err != nil && !errors.Is(err, errcode.ErrInvalidArgument) {
						t.Error(err)
					}
					for i := 1; i < len(es); i++ {
						if es[i].ID <= es[i-1].ID {
							t.Errorf("ids out of order: %v", es)
						}
					}
				}
			}
		})
	}
	wg.Wait()
	for u := range units {
		ms := s.List(fmt.Sprintf("p/u%d", u))
		if runsOf(ms) != "4,5,6,7" {
			t.Fatalf("unit %d kept %s", u, runsOf(ms))
		}
		if es, _, err := s.Read(fmt.Sprintf("p/u%d", u), 7, 0, 0); err != nil || len(es) != 1 || es[0].Text != "300" {
			t.Fatalf("unit %d run 7: %v %v", u, es, err)
		}
	}
}

func TestOptionsFromEnv(t *testing.T) {
	t.Setenv(EnvMaxRuns, "")
	t.Setenv(EnvMaxBytes, "")
	o, err := OptionsFromEnv()
	if err != nil || o.MaxRunsPerUnit != DefaultMaxRunsPerUnit || o.MaxBytesPerUnit != DefaultMaxBytesPerUnit {
		t.Fatalf("defaults: %+v %v", o, err)
	}
	t.Setenv(EnvMaxRuns, "2")
	t.Setenv(EnvMaxBytes, "4096")
	if o, err := OptionsFromEnv(); err != nil || o.MaxRunsPerUnit != 2 || o.MaxBytesPerUnit != 4096 {
		t.Fatalf("set: %+v %v", o, err)
	}
	t.Setenv(EnvMaxRuns, "zero")
	if _, err := OptionsFromEnv(); err == nil || !strings.Contains(err.Error(), EnvMaxRuns) {
		t.Fatalf("bad value: %v", err)
	}
}

package ratelimit

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in    string
		burst int
		want  Limit
	}{
		{"2/s", 0, Limit{2, 2}},
		{"2/s", 5, Limit{2, 5}},
		{"30/m", 0, Limit{0.5, 1}},
		{"3600/h", 0, Limit{1, 1}},
		{" 0.5/s ", 0, Limit{0.5, 1}},
	} {
		got, err := Parse(c.in, c.burst)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q, %d) = %v, %v; want %v", c.in, c.burst, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "2", "2/d", "0/s", "-1/s", "x/s", "Inf/s", "NaN/s"} {
		if _, err := Parse(bad, 0); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	if _, err := Parse("1/s", -1); err == nil {
		t.Error("a negative burst was accepted")
	}
}

func TestScenario_BurstThenRefillAtTheRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New()
		w := Want{Key: "up", Limit: Limit{PerSecond: 2, Burst: 2}}
		for i := range 2 {
			if ok, _, _ := l.Take(time.Now(), w); !ok {
				t.Fatalf("call %d of the burst refused", i)
			}
		}
		ok, wait, key := l.Take(time.Now(), w)
		if ok || key != "up" || wait != 500*time.Millisecond {
			t.Fatalf("third call: ok=%v wait=%v key=%q; want refused for 500ms by up", ok, wait, key)
		}
		time.Sleep(wait)
		if ok, _, _ := l.Take(time.Now(), w); !ok {
			t.Fatal("refused after waiting retry_after")
		}
		time.Sleep(time.Hour) // a full bucket holds no more than the burst
		n := 0
		for {
			if ok, _, _ := l.Take(time.Now(), w); !ok {
				break
			}
			n++
		}
		if n != 2 {
			t.Fatalf("after an idle hour %d calls passed, want the burst 2", n)
		}
	})
}

func TestScenario_RefusedCallCostsTheOtherBucketsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New()
		harness := Want{Key: "h", Limit: Limit{PerSecond: 1, Burst: 3}}
		tool := Want{Key: "t", Limit: Limit{PerSecond: 1, Burst: 1}}
		if ok, _, _ := l.Take(time.Now(), harness, tool); !ok {
			t.Fatal("first call refused")
		}
		for range 5 {
			if ok, _, key := l.Take(time.Now(), harness, tool); ok || key != "t" {
				t.Fatalf("ok=%v key=%q, want refused by t", ok, key)
			}
		}
		// The harness bucket still holds 2: two calls to an unlimited tool pass.
		for i := range 2 {
			if ok, _, _ := l.Take(time.Now(), harness); !ok {
				t.Fatalf("call %d refused: refusals took the harness's tokens", i)
			}
		}
	})
}

func TestZeroLimitIsNoBucket(t *testing.T) {
	l := New()
	for range 100 {
		if ok, _, _ := l.Take(time.Now(), Want{Key: "x"}); !ok {
			t.Fatal("the zero limit refused")
		}
	}
	if l.Len() != 0 {
		t.Fatalf("%d buckets for no limit", l.Len())
	}
	l.Take(time.Now(), Want{Key: "a", Limit: Limit{1, 1}}, Want{Key: "b", Limit: Limit{1, 1}})
	l.Forget(func(k string) bool { return k == "a" })
	if l.Len() != 1 {
		t.Fatalf("Forget kept %d buckets, want 1", l.Len())
	}
}

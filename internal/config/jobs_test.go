package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestJobControlsParse(t *testing.T) {
	cfg, err := Parse("/d/harness.toml", []byte(`
[harness.nightly]
cmd = "sh"
schedule = "@daily"
timeout = 90
on_overlap = "queue"
catch_up = true
keep_runs = 7
hours = "Mon-Fri 08:00-19:00"
max_runs_per_day = 4
max_cost_per_day = 12.5

[harness.once]
cmd = "sh"
restart = "no"
timeout = 0.5

[harness.service]
cmd = "sleep"
`))
	if err != nil {
		t.Fatal(err)
	}
	n := cfg.Harnesses["nightly"].Job
	if n.Timeout != 90*time.Second || n.OnOverlap != OverlapQueue || !n.CatchUp || n.KeepRuns != 7 {
		t.Fatalf("nightly: %+v", n)
	}
	if hs := cfg.Harnesses["nightly"].Holds; hs.Hours == nil || hs.Hours.String() != "Mon-Fri 08:00-19:00" || hs.MaxRunsPerDay != 4 || hs.MaxCostPerDay != 12.5 {
		t.Fatalf("nightly holds: %+v", hs)
	}
	if o := cfg.Harnesses["once"].Job; o.Timeout != 500*time.Millisecond || o.OnOverlap != OverlapSkip {
		t.Fatalf("once: %+v", o)
	}
	if s := cfg.Harnesses["service"].Job; s != (JobControls{OnOverlap: OverlapSkip}) {
		t.Fatalf("service: %+v", s)
	}
}

func TestJobControlsBadInputNamesFileAndLine(t *testing.T) {
	for _, tt := range []struct{ name, src, want string }{
		{"bad on_overlap", "[harness.j]\ncmd='x'\nschedule='@daily'\non_overlap = 'pile'\n",
			`harness.toml:4: harness.j.on_overlap: invalid on_overlap "pile" (want "skip", "queue" or "replace")`},
		{"negative timeout", "[harness.j]\ncmd='x'\nrestart='no'\ntimeout = -1\n",
			`harness.toml:4: harness.j.timeout: must be >= 0 seconds, not -1`},
		{"keep_runs zero", "[harness.j]\ncmd='x'\nkeep_runs = 0\n",
			`harness.toml:3: harness.j.keep_runs: 0 is out of range (want 1..100000)`},
		{"keep_runs string", "[harness.j]\ncmd='x'\nkeep_runs = 'all'\n",
			`harness.toml:3: harness.j.keep_runs: must be a whole number, not a string`},
		{"catch_up without schedule", "[harness.j]\ncmd='x'\nrestart='no'\ncatch_up = true\n",
			`harness.toml:4: harness.j.catch_up: needs a schedule`},
		{"bad hours", "[harness.j]\ncmd='x'\nhours = 'Mon-Fry 08:00-19:00'\n",
			`harness.toml:3: harness.j.hours: invalid hours "Mon-Fry 08:00-19:00": unknown day in "Mon-Fry" (want Mon, Tue, Wed, Thu, Fri, Sat, Sun)`},
		{"negative budget", "[harness.j]\ncmd='x'\nmax_runs_per_day = -2\n",
			`harness.toml:3: harness.j.max_runs_per_day: -2 is out of range (want 1..1000000)`},
		{"negative cost budget", "[harness.j]\ncmd='x'\nmax_cost_per_day = -0.5\n",
			`harness.toml:3: harness.j.max_cost_per_day: -0.5 is out of range (want more than 0, at most 1000000 US dollars)`},
		{"zero agents", "[daemon]\nmax_concurrent_agents = 0\n",
			`harness.toml:2: daemon.max_concurrent_agents: 0 is out of range (want 1..10000)`},
		{"timeout on a service", "[harness.s]\ncmd='x'\n\ntimeout = 5\n",
			`harness.toml:4: harness.s.timeout: applies to jobs only (a schedule, or restart = "no" or "on-failure"), not restart = "always"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("/d/harness.toml", []byte(tt.src))
			if err == nil {
				t.Fatal("no error")
			}
			if got := strings.Split(err.Error(), "\n"); !slices.Contains(got, tt.want) {
				t.Fatalf("errors %q lack %q", got, tt.want)
			}
		})
	}
}

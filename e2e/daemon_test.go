//go:build e2e

package e2e

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const sleeperConfig = `
[harness.sleeper]
cmd = "sh"
args = ["-c", "echo hello from sleeper; exec sleep 100000"]
description = "sleeps"
stop_grace = 2
`

func TestCLI_ListDescribeStartStopRestart(t *testing.T) {
	f := newFleet(t, sleeperConfig)

	// list --json carries every field of its contract (docs/design/wire.md), before anything started.
	out := f.MustRun("list", "--json")
	var raw []map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw) != 1 {
		t.Fatalf("list: %v", raw)
	}
	for _, k := range []string{"name", "state", "enabled", "pid", "restart_count", "last_exit_code", "description"} {
		if _, ok := raw[0][k]; !ok {
			t.Errorf("list --json row lacks %q: %v", k, raw[0])
		}
	}
	if u := f.unit("sleeper"); u.State != "stopped" || u.Enabled {
		t.Fatalf("before start: %+v", u)
	}

	f.MustRun("start", "sleeper")
	u := f.waitState("sleeper", "running")
	if !u.Enabled || u.PID == 0 {
		t.Fatalf("after start: %+v", u)
	}
	// A second start is a no-op: same process, reported unchanged.
	var act struct {
		Results []struct {
			Name    string `json:"name"`
			Changed bool   `json:"changed"`
		} `json:"results"`
	}
	f.MustJSON(&act, "start", "sleeper")
	if len(act.Results) != 1 || act.Results[0].Changed {
		t.Fatalf("double start should be a no-op: %+v", act)
	}
	if again := f.unit("sleeper"); again.PID != u.PID {
		t.Fatalf("double start replaced the process: %d -> %d", u.PID, again.PID)
	}

	var d map[string]any
	f.MustJSON(&d, "describe", "sleeper")
	for _, k := range []string{"name", "state", "enabled", "pid", "restart_count", "last_exit_code", "description", "config", "config_changed", "current_run"} {
		if _, ok := d[k]; !ok {
			t.Errorf("describe --json lacks %q", k)
		}
	}
	if run, _ := d["current_run"].(map[string]any); run == nil || run["cause"] != "manual" {
		t.Errorf("describe current_run = %v, want a manual run", d["current_run"])
	}

	f.MustRun("restart", "sleeper")
	r := f.waitState("sleeper", "running")
	if r.PID == u.PID {
		t.Fatalf("restart kept pid %d", r.PID)
	}
	waitGone(t, "pre-restart process", u.PID)

	f.MustRun("stop", "sleeper")
	s := f.unit("sleeper")
	if s.State != "stopped" || s.Enabled || s.PID != 0 {
		t.Fatalf("after stop: %+v", s)
	}
	waitGone(t, "stopped process", r.PID)
	f.MustRun("stop", "sleeper") // idempotent

	// Unknown names fail with the stable code.
	out, _, code := f.Run("describe", "nope", "--json")
	if code == 0 || !strings.Contains(out, `"unknown_harness"`) {
		t.Fatalf("describe nope: exit %d, %s", code, out)
	}
}

func TestCLI_LogsPaging(t *testing.T) {
	f := newFleet(t, `
[harness.printer]
cmd = "sh"
args = ["-c", "i=1; while [ $i -le 3000 ]; do echo line-$i; i=$((i+1)); done; echo done-printing; exec sleep 100000"]
`)
	f.MustRun("start", "printer")
	type summary struct {
		Entries []struct {
			ID   uint64 `json:"id"`
			Kind string `json:"kind"`
			Text string `json:"text"`
		} `json:"entries"`
		NextCursor uint64 `json:"next_cursor"`
		Truncated  bool   `json:"truncated"`
		Note       string `json:"note"`
	}
	f.WaitFor("all output", 20*time.Second, func() bool {
		var s summary
		f.MustJSON(&s, "logs", "printer", "--lines", "1")
		return len(s.Entries) == 1 && s.Entries[0].Text == "done-printing"
	})

	var tail summary
	f.MustJSON(&tail, "logs", "printer", "--lines", "10")
	if len(tail.Entries) != 10 || tail.NextCursor != tail.Entries[9].ID {
		t.Fatalf("tail: %+v", tail)
	}
	// A cursor returns only newer entries.
	mid := tail.Entries[4].ID
	var after summary
	f.MustJSON(&after, "logs", "printer", "--cursor", fmt.Sprint(mid))
	if len(after.Entries) != 5 || after.Entries[0].ID <= mid || after.Note != "" {
		t.Fatalf("cursor %d: %+v", mid, after)
	}
	// A cursor that aged out (3000 lines > the retained entries) says so
	// and returns the retained tail.
	var aged summary
	f.MustJSON(&aged, "logs", "printer", "--cursor", "1", "--lines", "3")
	if aged.Note == "" || !strings.Contains(aged.Note, "aged out") || len(aged.Entries) != 3 || aged.Entries[2].Text != "done-printing" {
		t.Fatalf("aged-out cursor: %+v", aged)
	}
	// max_bytes cuts and says truncated.
	var capped summary
	f.MustJSON(&capped, "logs", "printer", "--lines", "1000", "--max-bytes", "2000")
	if !capped.Truncated || len(capped.Entries) == 0 || len(capped.Entries) >= 1000 {
		t.Fatalf("max_bytes: truncated=%v entries=%d", capped.Truncated, len(capped.Entries))
	}

	type rawPage struct {
		Text       string `json:"text"`
		Offset     int64  `json:"offset"`
		NextOffset int64  `json:"next_offset"`
		Truncated  bool   `json:"truncated"`
		Note       string `json:"note"`
		Cols       int    `json:"cols"`
		Rows       int    `json:"rows"`
	}
	var rp rawPage
	f.MustJSON(&rp, "logs", "printer", "--raw", "--max-bytes", "1000")
	if rp.NextOffset-rp.Offset != int64(len(rp.Text)) || !strings.Contains(rp.Text, "done-printing") || rp.Cols == 0 || rp.Rows == 0 {
		t.Fatalf("raw tail: %+v", rp)
	}
	// An offset past the end repeats the whole tail with a note.
	var past rawPage
	f.MustJSON(&past, "logs", "printer", "--raw", "--offset", fmt.Sprint(rp.NextOffset+1_000_000), "--max-bytes", "1000")
	if past.Note == "" || past.Text == "" || !strings.Contains(past.Text, "done-printing") {
		t.Fatalf("offset past end: %+v", past)
	}
	// Paging from an offset: max_bytes cuts and next_offset continues.
	var first, second rawPage
	f.MustJSON(&first, "logs", "printer", "--raw", "--offset", fmt.Sprint(rp.Offset-500), "--max-bytes", "200")
	if !first.Truncated || len(first.Text) != 200 || first.NextOffset != rp.Offset-300 {
		t.Fatalf("raw page: %+v", first)
	}
	f.MustJSON(&second, "logs", "printer", "--raw", "--offset", fmt.Sprint(first.NextOffset), "--max-bytes", "200")
	if second.Offset != first.NextOffset {
		t.Fatalf("raw next page starts at %d, want %d", second.Offset, first.NextOffset)
	}
}

func TestCLI_RunsShowCrashAndRestart(t *testing.T) {
	f := newFleet(t, `
[harness.crasher]
cmd = "sh"
args = ["-c", "echo about to crash; sleep 0.2; exit 3"]
restart_delay = 0.2
`)
	f.MustRun("start", "crasher")
	type run struct {
		ID       uint64  `json:"id"`
		Harness  string  `json:"harness"`
		Cause    string  `json:"cause"`
		PID      int     `json:"pid"`
		Started  string  `json:"started_at"`
		Ended    *string `json:"ended_at"`
		ExitCode *int    `json:"exit_code"`
	}
	var rs []run
	f.WaitFor("a crash and a restart", 20*time.Second, func() bool {
		f.MustJSON(&rs, "runs", "crasher")
		return len(rs) >= 2 && rs[0].ExitCode != nil
	})
	if rs[0].Cause != "manual" || *rs[0].ExitCode != 3 || rs[0].Ended == nil || rs[0].PID == 0 {
		t.Fatalf("first run: %+v", rs[0])
	}
	if rs[1].Cause != "restart" || rs[1].ID <= rs[0].ID {
		t.Fatalf("second run: %+v", rs[1])
	}
	f.MustRun("stop", "crasher")
}

func TestCLI_ReloadRefusesBrokenFileAndKeepsRunning(t *testing.T) {
	f := newFleet(t, sleeperConfig)
	f.MustRun("start", "sleeper")
	before := f.waitState("sleeper", "running")

	f.WriteConfig(sleeperConfig + "\n[harness.broken]\nargs = [\"x\"]\n")
	out, errOut, code := f.Run("reload")
	if code == 0 {
		t.Fatalf("reload of a broken file succeeded: %s", out)
	}
	if !strings.Contains(errOut, "harness.toml:") || !strings.Contains(errOut, "harness.broken") {
		t.Fatalf("reload error should name file:line and key: %q", errOut)
	}
	jout, _, jcode := f.Run("reload", "--json")
	if jcode == 0 || !strings.Contains(jout, `"config_invalid"`) {
		t.Fatalf("reload --json: exit %d, %s", jcode, jout)
	}
	after := f.unit("sleeper")
	if after.PID != before.PID || after.State != "running" {
		t.Fatalf("broken reload touched the running harness: %+v -> %+v", before, after)
	}
	var us []unitInfo
	f.MustJSON(&us, "list")
	if len(us) != 1 {
		t.Fatalf("broken reload changed the config: %+v", us)
	}

	// A good reload applies: a new harness appears, the old one keeps running.
	f.WriteConfig(sleeperConfig + "\n[harness.second]\ncmd = \"true\"\n")
	f.MustRun("reload")
	f.MustJSON(&us, "list")
	if len(us) != 2 || f.unit("sleeper").PID != before.PID {
		t.Fatalf("after good reload: %+v", us)
	}
}

func TestCLI_SecondDaemonRefused(t *testing.T) {
	f := newFleet(t, sleeperConfig)
	f.MustRun("start", "sleeper")
	second := f.daemonCmd()
	out, err := second.CombinedOutput()
	if err == nil {
		t.Fatalf("second daemon started: %s", out)
	}
	if !strings.Contains(string(out), "another daemon") {
		t.Errorf("second daemon's message: %s", out)
	}
	if u := f.unit("sleeper"); u.State != "running" {
		t.Fatalf("first daemon disturbed: %+v", u)
	}
}

func TestCLI_BadFramesRefusedWhileOthersWork(t *testing.T) {
	f := newFleet(t, sleeperConfig)
	hello := func(c net.Conn) {
		payload := []byte(`{"proto":"1.0","mode":"control","client":"e2e"}`)
		writeFrame(t, c, 1, payload)
		readFrame(t, c) // welcome
	}
	cases := map[string]func(net.Conn){
		"oversized": func(c net.Conn) {
			var hdr [5]byte
			binary.BigEndian.PutUint32(hdr[:4], 64<<20)
			hdr[4] = 3
			c.Write(hdr[:])
		},
		"garbage": func(c net.Conn) { writeFrame(t, c, 3, []byte("{not json")) },
	}
	for name, send := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := net.Dial("unix", f.Socket)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			hello(c)
			send(c)
			typ, payload := readFrame(t, c)
			if typ != 6 || !strings.Contains(string(payload), "invalid_argument") {
				t.Fatalf("want an error frame, got type %d %s", typ, payload)
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err != io.EOF {
				t.Fatalf("connection should be closed after a bad frame, got %v", err)
			}
			// Meanwhile the daemon serves everybody else.
			f.MustRun("list", "--json")
		})
	}
}

func writeFrame(t *testing.T, c net.Conn, typ byte, payload []byte) {
	t.Helper()
	buf := make([]byte, 5+len(payload))
	binary.BigEndian.PutUint32(buf, uint32(1+len(payload)))
	buf[4] = typ
	copy(buf[5:], payload)
	if _, err := c.Write(buf); err != nil {
		t.Fatal(err)
	}
}

func readFrame(t *testing.T, c net.Conn) (byte, []byte) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var hdr [5]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		t.Fatalf("read frame: %v", err)
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	payload := make([]byte, n-1)
	if _, err := io.ReadFull(c, payload); err != nil {
		t.Fatalf("read frame payload: %v", err)
	}
	return hdr[4], payload
}

func TestCLI_IntentSurvivesADaemonRestart(t *testing.T) {
	f := newFleet(t, `
[harness.keeper]
cmd = "sleep"
args = ["100000"]
enabled = true

[harness.benched]
cmd = "sleep"
args = ["100000"]
enabled = true
`)
	f.waitState("keeper", "running")
	f.waitState("benched", "running")
	f.MustRun("stop", "benched")
	f.Stop() // SIGTERM: a clean shutdown stops units but keeps intent
	f.start()
	f.waitState("keeper", "running")
	if u := f.unit("benched"); u.State != "stopped" || u.Enabled {
		t.Fatalf("a harness stopped by the operator came back after a restart: %+v", u)
	}
}

// TestCLI_JSONShapesOfSection9 pins the keys that tools outside this repo
// read from --json output, logs included (docs/design/wire.md).
func TestCLI_JSONShapesOfSection9(t *testing.T) {
	f := newFleet(t, sleeperConfig+`
[harness.job]
cmd = "true"
schedule = "@hourly"
`+upstreamTable("up", "shapes-inst", ""))
	f.MustRun("start", "sleeper")
	f.waitState("sleeper", "running")
	keys := func(args []string, want ...string) {
		t.Helper()
		out := f.MustRun(append(args, "--json")...)
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		obj, ok := v.(map[string]any)
		if arr, isArr := v.([]any); isArr {
			if len(arr) == 0 {
				t.Fatalf("%v: empty array", args)
			}
			obj, ok = arr[0].(map[string]any)
		}
		if !ok {
			t.Fatalf("%v: not an object or array of objects: %s", args, out)
		}
		for _, k := range want {
			if _, ok := obj[k]; !ok {
				t.Errorf("harness %v --json lacks %q: %s", args, k, out)
			}
		}
	}
	keys([]string{"logs", "sleeper"}, "format", "entries", "next_cursor", "truncated", "note")
	keys([]string{"logs", "sleeper", "--raw"}, "format", "text", "offset", "next_offset", "truncated", "note", "cols", "rows")
	keys([]string{"runs"}, "id", "harness", "cause", "pid", "started_at", "ended_at", "exit_code", "signal")
	keys([]string{"daemon-info"}, "version", "proto", "pid", "uptime", "paths", "profile", "warnings")
	keys([]string{"jobs"}, "name", "schedule", "next_fire", "last_run", "state")
	keys([]string{"triggers"}, "job", "kind", "spec", "next_fire", "last_fired", "fired", "skipped")
	keys([]string{"mcp", "status"}, "key", "state", "pid", "tools", "restarts", "last_error")
	// A harness with a process shows its activity; a stopped
	// one keeps the row it always had.
	keys([]string{"describe", "sleeper"}, "activity", "idle_s")
	keys([]string{"screen", "sleeper"}, "name", "run_id", "cols", "rows", "cursor", "title", "alt_screen", "activity", "idle_s", "lines", "scrollback")
	keys([]string{"wait", "sleeper", "--idle", "1ms", "--timeout", "20s"}, "name", "idle_s", "timed_out")
	keys([]string{"list"}, "name", "state", "enabled", "pid", "restart_count", "last_exit_code", "description", "schedule", "next_fire")
	var rows []map[string]any
	f.MustJSON(&rows, "list")
	for _, r := range rows {
		_, hasActivity := r["activity"]
		_, hasIdle := r["idle_s"]
		_, hasSince := r["idle_since"]
		switch r["name"] {
		case "sleeper":
			if !hasActivity || !hasIdle {
				t.Errorf("list --json row of a running harness lacks activity/idle_s: %v", r)
			}
			if hasSince != (r["activity"] == "idle") {
				t.Errorf("list --json row: idle_since only while idle: %v", r)
			}
		default:
			if hasActivity || hasIdle || hasSince {
				t.Errorf("list --json row of a stopped harness grew activity keys: %v", r)
			}
		}
	}
	var d map[string]any
	f.MustJSON(&d, "describe", "job")
	if _, ok := d["activity"]; ok {
		t.Errorf("describe --json of a stopped job shows activity: %v", d)
	}
}

func TestCLI_ConfigChangeWaitsForTheNextStart(t *testing.T) {
	f := newFleet(t, sleeperConfig)
	f.MustRun("start", "sleeper")
	before := f.waitState("sleeper", "running")
	f.WriteConfig(strings.Replace(sleeperConfig, "hello from sleeper", "hello again", 1))
	f.MustRun("reload")
	var d struct {
		PID           int  `json:"pid"`
		ConfigChanged bool `json:"config_changed"`
	}
	f.MustJSON(&d, "describe", "sleeper")
	if !d.ConfigChanged || d.PID != before.PID {
		t.Fatalf("a running harness must keep running, flagged config_changed: %+v", d)
	}
	f.MustRun("restart", "sleeper")
	f.waitState("sleeper", "running")
	f.MustJSON(&d, "describe", "sleeper")
	if d.ConfigChanged {
		t.Fatal("config_changed stays after the restart that applied it")
	}
	f.WaitFor("the new command's output", 10*time.Second, func() bool {
		return strings.Contains(f.MustRun("logs", "sleeper"), "hello again")
	})
}

func TestCLI_UseProfileSwitchesTheRunningSet(t *testing.T) {
	f := newFleet(t, `
[harness.a]
cmd = "sleep"
args = ["100000"]

[harness.b]
cmd = "sleep"
args = ["100000"]

[profile.work]
harnesses = ["a"]

[profile.play]
harnesses = ["b"]
`)
	f.MustRun("use-profile", "work")
	f.waitState("a", "running")
	if u := f.unit("b"); u.State != "stopped" {
		t.Fatalf("b under profile work: %+v", u)
	}
	f.MustRun("use-profile", "play")
	f.waitState("b", "running")
	f.waitState("a", "stopped")
	var ps []struct {
		Name   string `json:"name"`
		Active bool   `json:"active"`
	}
	f.MustJSON(&ps, "profiles")
	if len(ps) != 2 || ps[0].Name != "play" || !ps[0].Active || ps[1].Active {
		t.Fatalf("profiles: %+v", ps)
	}
	var info struct {
		Profile string `json:"profile"`
	}
	f.MustJSON(&info, "daemon-info")
	if info.Profile != "play" {
		t.Fatalf("daemon-info profile %q", info.Profile)
	}
	if _, _, code := f.Run("use-profile", "nope"); code == 0 {
		t.Fatal("an unknown profile was accepted")
	}
}

// A child that dropped its environment (env -i, as MCP clients do when they
// start servers) carries no marker, but it is still in the unit's process
// group: in fallback mode, when the main process exits, it is ended with
// the rest. (In cgroup mode it keeps the run going instead:
// TestScenario_RunEndsWhenItsCgroupIsEmpty.)
func TestCLI_UnmarkedLeftoverInTheGroupIsEnded(t *testing.T) {
	dir := t.TempDir()
	f := newFleetArgs(t, fmt.Sprintf(`
[harness.parent]
cmd = "sh"
args = ["-c", "env -i sh -c 'trap \"\" HUP TERM; echo $$ > %s/orphan.pid; exec sleep 100000' & sleep 0.5; exit 0"]
restart = "no"
`, dir), "--cgroup=off")
	f.MustRun("start", "parent")
	orphan := readPID(t, filepath.Join(dir, "orphan.pid"))
	f.WaitFor("the job to end", 20*time.Second, func() bool {
		u := f.unit("parent")
		return u.State == "stopped" || u.State == "failed"
	})
	waitGone(t, "unmarked child left in the unit's group", orphan)
}

// A --json failure is {"error":{"code","message"}}, usage errors included.
func TestCLI_JSONErrorShape(t *testing.T) {
	f := newFleet(t, sleeperConfig)
	for args, want := range map[string]string{
		"describe":           "invalid_argument",
		"list --bogus":       "invalid_argument",
		"start":              "invalid_argument",
		"describe ghost":     "unknown_harness",
		"trigger sleeper":    "not_a_job",
		"use-profile absent": "invalid_argument",
	} {
		out, _, code := f.Run(append(strings.Fields(args), "--json")...)
		var body struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if code == 0 || json.Unmarshal([]byte(out), &body) != nil || body.Error.Code != want || body.Error.Message == "" {
			t.Errorf("harness %s --json: exit %d, %q; want code %s", args, code, out, want)
		}
	}
}

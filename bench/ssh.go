package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/sshtest"
)

// Part 7: remote operation through the system's ssh on
// loopback (a real sshd whose key's forced command is `harness bridge`),
// next to the same verb on the local socket, interleaved in rounds:
//
//	list: `harness list --json` on a fleet of one echo harness and
//	      o.Harnesses/10 sleepers, as a new process each time (what a
//	      user's command costs): local, through ssh, and through ssh with
//	      connection sharing (ControlMaster), as a user's ssh config can
//	      set it. And `ssh host true` with a key without a forced command:
//	      what ssh, the login shell and its rc files cost with no harness.
//	attach: keystroke to echo through `harness attach` on a PTY (part 6's
//	      path t), local and through ssh.
//
// Not in the default parts: it needs Debian's openssh-server.

// sshRow is one measured path of part 7.
type sshRow struct {
	What, Path string
	Stats      stats
}

func runSSH(ctx context.Context, o options, bin, tmp string, rep *report) error {
	cfg := fmt.Sprintf("[harness.echo]\ncmd = \"sh\"\nargs = [\"-c\", %q]\nenabled = true\nstop_grace = 1\n", echoChild)
	for i := range max(o.Harnesses/10, 1) {
		cfg += fmt.Sprintf("\n[harness.sleeper-%d]\ncmd = \"sleep\"\nargs = [\"100000\"]\nenabled = true\nstop_grace = 1\n", i)
	}
	d, err := startDaemon(ctx, o, bin, tmp, "ssh", cfg)
	if err != nil {
		return err
	}
	defer d.close()
	if err := d.waitRunning(ctx, 1+max(o.Harnesses/10, 1), 30*time.Second); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(tmp, "sshd")
	if err != nil {
		return err
	}
	srv, err := sshtest.Start(dir, sshtest.Key{Name: "bench", Command: bin + " --socket " + d.socket + " bridge --grant read,write,input"},
		sshtest.Key{Name: "shell"}) // no forced command: `ssh host true`, the base
	if err != nil {
		return err
	}
	defer srv.Close()
	plain := client.SSHCommandEnv + "=" + srv.SSHCommand("bench")
	mux := client.SSHCommandEnv + "=" + srv.SSHCommand("bench", "-o", "ControlMaster=auto",
		"-o", "ControlPath="+filepath.Join(dir, "cm-%C"), "-o", "ControlPersist=120")
	defer exec.Command("ssh", "-o", "ControlPath="+filepath.Join(dir, "cm-%C"), "-O", "exit", "x").Run()

	list := map[string]func() error{
		"local":     func() error { return runQuiet(ctx, nil, bin, "--socket", d.socket, "list", "--json") },
		"ssh":       func() error { return runQuiet(ctx, []string{plain}, bin, "--host", srv.Host(), "list", "--json") },
		"ssh (mux)": func() error { return runQuiet(ctx, []string{mux}, bin, "--host", srv.Host(), "list", "--json") },
		// What the machine's ssh costs with no harness in it: the
		// connection, the login shell and its rc files, `true`.
		"ssh true": func() error {
			argv := append(strings.Fields(srv.SSHCommand("shell")), "-p", strconv.Itoa(srv.Port), srv.User+"@127.0.0.1", "true")
			return runQuiet(ctx, nil, argv[0], argv[1:]...)
		},
	}
	listOrder := []string{"local", "ssh", "ssh (mux)", "ssh true"}
	samples := map[string][]time.Duration{}
	runs := max(o.ListRuns/5, 5)
	for round := range o.Rounds {
		for i := range listOrder {
			path := listOrder[(i+round)%len(listOrder)]
			o.progress("part 7: list, round %d, %s", round+1, path)
			if err := list[path](); err != nil { // warm-up (and the mux's master)
				return fmt.Errorf("list %s: %w", path, err)
			}
			got, err := timeN(runs, list[path])
			if err != nil {
				return fmt.Errorf("list %s: %w", path, err)
			}
			samples[path] = append(samples[path], got...)
		}
	}
	for _, p := range listOrder {
		rep.SSH = append(rep.SSH, sshRow{What: "list --json", Path: p, Stats: summarize(samples[p])})
	}

	attach := map[string]func() (keyTrip, error){
		"local": func() (keyTrip, error) { return newCLITrip(ctx, bin, d.socket) },
		"ssh": func() (keyTrip, error) {
			return newCLITripArgs(ctx, bin, []string{plain}, "--host", srv.Host(), "attach", "echo")
		},
	}
	attachOrder := []string{"local", "ssh"}
	keys := map[string][]time.Duration{}
	for round := range o.Rounds {
		for i := range attachOrder {
			path := attachOrder[(i+round)%len(attachOrder)]
			o.progress("part 7: attach, round %d, %s", round+1, path)
			kt, err := attach[path]()
			if err != nil {
				return fmt.Errorf("attach %s: %w", path, err)
			}
			for k := range o.Warmup + o.Keys {
				key := byte('a' + k%26)
				t0 := time.Now()
				if err := kt.trip(key); err != nil {
					kt.close()
					return fmt.Errorf("attach %s: key %d: %w", path, k, err)
				}
				if k >= o.Warmup {
					keys[path] = append(keys[path], time.Since(t0))
				}
			}
			kt.close()
		}
	}
	for _, p := range attachOrder {
		rep.SSH = append(rep.SSH, sshRow{What: "attach keystroke to echo", Path: p, Stats: summarize(keys[p])})
	}
	return nil
}

// runQuiet runs bin with args, its output discarded; env is added to ours.
func runQuiet(ctx context.Context, env []string, bin string, args ...string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %w: %s", args, err, out)
	}
	return nil
}

// printSSH writes part 7's table, each path against the local one.
func (r *report) printSSH(w io.Writer) {
	if len(r.SSH) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Part 7: through ssh on loopback vs the local socket\n\n")
	fmt.Fprintf(w, "| measurement | path | n | p50 | p99 | p50 vs local | p99 vs local |\n|---|---|---:|---:|---:|---:|---:|\n")
	base := map[string]stats{}
	for _, row := range r.SSH {
		if row.Path == "local" {
			base[row.What] = row.Stats
		}
	}
	for _, row := range r.SSH {
		b := base[row.What]
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s |\n", row.What, row.Path, row.Stats.N, us(row.Stats.P50), us(row.Stats.P99),
			ratio(float64(row.Stats.P50), float64(b.P50)), ratio(float64(row.Stats.P99), float64(b.P99)))
	}
	p50 := map[string]time.Duration{}
	for _, row := range r.SSH {
		if row.What == "list --json" {
			p50[row.Path] = row.Stats.P50
		}
	}
	if p50["ssh true"] > 0 {
		fmt.Fprintf(w, "\nssh's own part (ssh true, no harness): %s; list through ssh minus it: %s (the local list: %s)\n",
			us(p50["ssh true"]), us(p50["ssh"]-p50["ssh true"]), us(p50["local"]))
	}
}

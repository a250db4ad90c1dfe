package supervise

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/proctree"
)

func TestParseEnvFile(t *testing.T) {
	const content = `# comment
PLAIN=value
  export EXPORTED=yes
SPACED = trimmed value  # trailing comment
SINGLE='it''s # not a comment'
SQ='a\nb'
DQ="line1\nline2 \"q\" back\\slash"
EMPTY=
HASH=a#b

`
	path := filepath.Join(t.TempDir(), "x.env")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ParseEnvFile(path)
	if err == nil || !strings.Contains(err.Error(), path+":5") {
		t.Fatalf("SINGLE with text after the quote: err %v", err)
	}
	fixed := strings.Replace(content, "SINGLE='it''s # not a comment'", "SINGLE='it s # not a comment'", 1)
	if err := os.WriteFile(path, []byte(fixed), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ParseEnvFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PLAIN=value", "EXPORTED=yes", "SPACED=trimmed value", "SINGLE=it s # not a comment",
		`SQ=a\nb`, "DQ=line1\nline2 \"q\" back\\slash", "EMPTY=", "HASH=a#b"}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

func TestParseEnvFileErrorsNeverShowValues(t *testing.T) {
	const secret = "hunter2-very-secret"
	cases := map[string]string{
		"no equals":         "JUSTTEXT" + secret,
		"bad key":           "BAD-KEY=" + secret,
		"open single quote": "K='" + secret,
		"open double quote": `K="` + secret,
		"text after quote":  `K="x"` + secret,
	}
	for name, line := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.env")
			if err := os.WriteFile(path, []byte("OK=1\n"+line+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := ParseEnvFile(path)
			if err == nil || !strings.Contains(err.Error(), path+":2") || strings.Contains(err.Error(), secret) ||
				strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("err = %v", err)
			}
		})
	}
	_, err := ParseEnvFile("/nonexistent/dir/missing.env")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/dir/missing.env") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestSpawnEnvLayering(t *testing.T) {
	cfg := UnitConfig{Name: "rev", Kind: KindHarness,
		Env:      map[string]string{"B": "env", "C": "env", "TERM": "dumb"},
		ExtraEnv: []string{"C=extra", "HARNESS_SOCKET=/run/h.sock", "HARNESS_NAME=spoofed"}}
	s := spawnEnv{cfg: cfg, base: []string{"A=base", "B=base", "HARNESS_TREE=old"}, marker: "m1", token: "tok",
		fileEnv: []string{"A=file", "D=file"}}
	got := s.build()
	want := []string{"A=file", "B=env", proctree.MarkerEnv("m1"), "D=file", "C=extra", "TERM=dumb",
		"HARNESS_SOCKET=/run/h.sock", "HARNESS_NAME=rev", "HARNESS_MCP_TOKEN=tok"}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	s.cfg.Kind, s.cfg.Env, s.cfg.ExtraEnv = KindUpstream, nil, nil
	up := s.build()
	for _, kv := range up {
		if strings.HasPrefix(kv, "HARNESS_MCP_TOKEN=") || strings.HasPrefix(kv, "TERM=") {
			t.Fatalf("upstream env has %s", kv)
		}
	}
	if !slices.Contains(up, proctree.MarkerEnv("m1")) {
		t.Fatalf("upstream env lacks the marker: %q", up)
	}
}

func TestEnvFileMissingAndSecretsNeverLeak(t *testing.T) {
	secretDir := t.TempDir() // outside the unit's state dir
	envFile := filepath.Join(secretDir, "reviewer.env")
	out := filepath.Join(secretDir, "seen")
	cfg := helperCfg("reviewer", "env", map[string]string{"HELPER_VAR": "API_KEY", "HELPER_OUT": out})
	cfg.EnvFile = envFile
	cfg.StopGrace = 2 * 1e9
	var daemonLog syncBuffer
	e := newEnv(t, cfg, func(d *Deps) { d.Logger = slog.New(slog.NewTextHandler(&daemonLog, nil)) })

	err := e.u.Start(context.Background(), api.CauseManual)
	if err == nil || !strings.Contains(err.Error(), envFile) {
		t.Fatalf("missing env_file: %v", err)
	}
	if st := e.u.Status(); st.State != StateFailed || !strings.Contains(st.LastError, envFile) {
		t.Fatalf("status %+v", st)
	}

	const secret = "sk-live-0123456789abcdef-SECRET"
	if err := os.WriteFile(envFile, []byte("export API_KEY=\""+secret+"\"\nOTHER='"+secret+"-2'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.start()
	e.waitLog("ready")
	if b, err := os.ReadFile(out); err != nil || string(b) != secret {
		t.Fatalf("child saw %q, %v", b, err)
	}
	// A broken env_file on the next start must not echo its content either.
	if err := os.WriteFile(envFile, []byte("API_KEY='"+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.u.Restart(context.Background(), api.CauseManual); err == nil {
		t.Fatal("restart with a broken env_file succeeded")
	}
	e.log.Flush()

	var texts strings.Builder
	for _, ev := range e.rec.all() {
		b, _ := json.Marshal(ev)
		texts.Write(b)
	}
	st, _ := json.Marshal(e.u.Status())
	texts.Write(st)
	ents, _ := e.log.EntriesAfter(0, 100000)
	for _, en := range ents {
		texts.WriteString(en.Text + "\n")
	}
	texts.WriteString(daemonLog.String())
	texts.WriteString(readAll(t, e.dir)) // log files, runs file, ledger
	if strings.Contains(texts.String(), secret) {
		t.Fatal("a value from the env_file leaked into events, status, log or state files")
	}
	if !strings.Contains(texts.String(), envFile) {
		t.Fatal("the env_file path is not named anywhere")
	}
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/fleettest"
	"github.com/harness-dev/harness/internal/sandbox"
	"github.com/harness-dev/harness/internal/testenv"
)

// needSandbox skips (fails under HARNESS_CI) where the kernel lacks what
// the sandbox needs.
func needSandbox(t *testing.T, userns bool) {
	t.Helper()
	if abi, _ := sandbox.ABI(); abi < 1 {
		testenv.Missing(t, "Landlock", "the kernel confines files with it")
	}
	if userns {
		if err := osexec.Command("unshare", "-Urn", "true").Run(); err != nil {
			testenv.Missing(t, "unprivileged user and network namespaces", err.Error())
		}
	}
}

// sandboxBox is a workdir, an outside directory and a fake HOME with an
// SSH key, for a harness that probes them, and a file in the shared /tmp.
type sandboxBox struct {
	work, outside, home, shared string
}

// newFleetIn is newFleet on the daemon files in dir.
func newFleetIn(t *testing.T, dir, config string) *fleet {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f := &fleet{Fleet: fleettest.NewFleet(t, harnessBin, dir, daemonEnv())}
	f.WriteConfig(config)
	f.start()
	t.Cleanup(f.checkCgroupGone)
	t.Cleanup(f.Stop)
	return f
}

func newSandboxBox(t *testing.T) sandboxBox {
	t.Helper()
	return newSandboxBoxIn(t, t.TempDir())
}

// newSandboxBoxIn is a box below root.
func newSandboxBoxIn(t *testing.T, root string) sandboxBox {
	t.Helper()
	b := sandboxBox{work: filepath.Join(root, "work"), outside: filepath.Join(root, "outside"), home: filepath.Join(root, "home")}
	shared, err := os.CreateTemp("/tmp", "harness-e2e-shared-")
	if err != nil {
		t.Fatal(err)
	}
	shared.Close()
	b.shared = shared.Name()
	t.Cleanup(func() { os.Remove(b.shared) })
	for _, d := range []string{b.work, b.outside, filepath.Join(b.home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(b.home, ".ssh", "id_ed25519"), []byte("PRIVATE KEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return b
}

// probeScript writes what it could do into the workdir's "result", then
// "done", and stays up.
func (b sandboxBox) probeScript() string {
	return strings.Join([]string{
		`r=result`,
		`echo inside > inside.txt && echo write-inside-ok >> $r || echo write-inside-refused >> $r`,
		`(echo x > ` + b.outside + `/escape.txt) 2>/dev/null && echo write-outside-ok >> $r || echo write-outside-refused >> $r`,
		`cat $HOME/.ssh/id_ed25519 >/dev/null 2>&1 && echo read-ssh-ok >> $r || echo read-ssh-refused >> $r`,
		`ln -s $HOME/.ssh/id_ed25519 link && (cat link >/dev/null 2>&1 && echo symlink-ok >> $r || echo symlink-refused >> $r)`,
		`ln $HOME/.ssh/id_ed25519 hard 2>/dev/null && echo hardlink-ok >> $r || echo hardlink-refused >> $r`,
		`echo t > $TMPDIR/t 2>/dev/null && echo tmpdir-ok >> $r || echo tmpdir-refused >> $r`,
		`echo t > /tmp/` + b.tmpName() + ` 2>/dev/null && echo tmp-write-ok >> $r || echo tmp-write-refused >> $r`,
		`test -e ` + b.shared + ` && echo shared-tmp-visible >> $r || echo shared-tmp-hidden >> $r`,
		`touch done`,
		`exec sleep 600`,
	}, "\n")
}

// tmpName is the file the probe writes in /tmp, unique to the box.
func (b sandboxBox) tmpName() string { return filepath.Base(b.shared) + "-written" }

func (b sandboxBox) harness(name, sandboxTable string) string {
	return fmt.Sprintf("[harness.%s]\ncmd = \"sh\"\nargs = [\"-c\", %q]\nworkdir = %q\nenv = { HOME = %q }\nstop_grace = 1\n%s\n",
		name, b.probeScript(), b.work, b.home, sandboxTable)
}

// result waits for the probe's "done" and returns its findings.
func (b sandboxBox) result(f *fleet) string {
	f.T.Helper()
	f.WaitFor("the probe to finish", 30*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(b.work, "done"))
		return err == nil
	})
	out, err := os.ReadFile(filepath.Join(b.work, "result"))
	if err != nil {
		f.T.Fatal(err)
	}
	return string(out)
}

func describeSandbox(f *fleet, name string) *api.SandboxView {
	f.T.Helper()
	var d api.Description
	f.MustJSON(&d, "describe", name)
	return d.Sandbox
}

func TestScenario_SandboxedAgentWritesOnlyInItsWorkdirAndCannotReadSSHKeys(t *testing.T) {
	needSandbox(t, false)
	dir := testenv.DirOutsideTmp(t, "he-")
	b := newSandboxBoxIn(t, filepath.Join(dir, "box"))
	f := newFleetIn(t, filepath.Join(dir, "d"), b.harness("boxed", `sandbox = { fs = "workdir" }`))
	f.MustRun("start", "boxed")
	got := b.result(f)
	for _, want := range []string{"write-inside-ok", "write-outside-refused", "read-ssh-refused", "symlink-refused", "hardlink-refused", "tmpdir-ok"} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("the sandboxed probe found %q, want %s", got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(b.outside, "escape.txt")); err == nil {
		t.Error("a file was written outside the workdir")
	}
	sb := describeSandbox(f, "boxed")
	if sb == nil || !strings.HasPrefix(sb.FS, "landlock-v") || sb.Network != "host" || sb.Missing != "" ||
		(sb.FilesDenied == "" && sb.FilesDeniedCount == nil) || sb.Denied != 0 {
		t.Fatalf("describe's sandbox: %+v", sb)
	}
	if out := f.MustRun("describe", "boxed"); !strings.Contains(out, "sandbox:        files landlock-v") {
		t.Errorf("describe's text shows no sandbox:\n%s", out)
	}
	// Its /tmp is its own where the machine permits a mount namespace:
	// writable, its writes in the harness's directory, the shared /tmp
	// out of sight; else only TMPDIR is its own and /tmp is unwritable.
	shared := filepath.Join("/tmp", b.tmpName())
	private := filepath.Join(f.State, "sandbox", "boxed", "tmp", b.tmpName())
	switch sb.Tmp {
	case sandbox.TmpLevelMount:
		for _, want := range []string{"tmp-write-ok", "shared-tmp-hidden"} {
			if !strings.Contains(got, want+"\n") {
				t.Errorf("the sandboxed probe found %q, want %s", got, want)
			}
		}
		if _, err := os.Stat(private); err != nil {
			t.Errorf("the write to /tmp is not in the private directory: %v", err)
		}
	case sandbox.TmpLevelDir:
		if err := osexec.Command("unshare", "-Urm", "mount", "--bind", "/tmp", "/tmp").Run(); err == nil {
			t.Errorf("describe's tmp is %q where a mount namespace is permitted", sb.Tmp)
		}
		if !strings.Contains(got, "tmp-write-refused\n") {
			t.Errorf("the sandboxed probe found %q, want tmp-write-refused", got)
		}
	default:
		t.Errorf("describe's tmp: %q", sb.Tmp)
	}
	if _, err := os.Stat(shared); err == nil {
		os.Remove(shared)
		t.Error("the sandboxed probe wrote in the shared /tmp")
	}
}

func TestScenario_UnsandboxedHarnessIsUnchanged(t *testing.T) {
	b := newSandboxBox(t)
	f := newFleet(t, b.harness("free", ""))
	f.MustRun("start", "free")
	got := b.result(f)
	t.Cleanup(func() { os.Remove(filepath.Join("/tmp", b.tmpName())) })
	for _, want := range []string{"write-inside-ok", "write-outside-ok", "read-ssh-ok", "symlink-ok", "hardlink-ok", "tmp-write-ok", "shared-tmp-visible"} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("the unsandboxed probe found %q, want %s", got, want)
		}
	}
	if sb := describeSandbox(f, "free"); sb != nil {
		t.Fatalf("an unsandboxed harness shows a sandbox: %+v", sb)
	}
}

// hostServer is an HTTP server on the host's loopback answering "reached".
func hostServer(t *testing.T) string {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached") }))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

// curlHarness runs curl against each address (through the proxy
// variables when set) and records "ADDR ok" or "ADDR refused".
func curlHarness(t *testing.T, name, work, sandboxTable string, addrs ...string) string {
	curl := testenv.Program(t, "curl")
	var lines []string
	for _, a := range addrs {
		lines = append(lines, fmt.Sprintf(`%s -sf -m 10 http://%s/ >/dev/null 2>&1 && echo "%s ok" >> result || echo "%s refused" >> result`, curl, a, a, a))
	}
	lines = append(lines, "touch done", "exec sleep 600")
	return fmt.Sprintf("[harness.%s]\ncmd = \"sh\"\nargs = [\"-c\", %q]\nworkdir = %q\nstop_grace = 1\n%s\n",
		name, strings.Join(lines, "\n"), work, sandboxTable)
}

func waitResult(f *fleet, work string) string {
	f.T.Helper()
	f.WaitFor("the probe to finish", 60*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(work, "done"))
		return err == nil
	})
	out, err := os.ReadFile(filepath.Join(work, "result"))
	if err != nil {
		f.T.Fatal(err)
	}
	return string(out)
}

func TestScenario_SandboxNetworkNoneReachesNothing(t *testing.T) {
	needSandbox(t, true)
	addr := hostServer(t)
	work := t.TempDir()
	f := newFleet(t, curlHarness(t, "cut", work, `sandbox = { network = "none" }`, addr))
	f.MustRun("start", "cut")
	if got := waitResult(f, work); got != addr+" refused\n" {
		t.Fatalf("network = none: %q", got)
	}
	if sb := describeSandbox(f, "cut"); sb == nil || sb.Network != "netns" || sb.FS != "off" {
		t.Fatalf("describe's sandbox: %+v", sb)
	}
}

func TestScenario_SandboxNetworkAllowReachesOnlyTheListedAddress(t *testing.T) {
	needSandbox(t, true)
	sandboxAllow(t)
}

// The same with the fallback ownership (process groups, no cgroup).
func TestScenario_SandboxNetworkAllowWithoutCgroups(t *testing.T) {
	needSandbox(t, true)
	sandboxAllow(t, "--cgroup=off")
}

func sandboxAllow(t *testing.T, daemonArgs ...string) {
	listed, other := hostServer(t), hostServer(t)
	work := t.TempDir()
	f := newFleetArgs(t, curlHarness(t, "allowed", work,
		fmt.Sprintf(`sandbox = { fs = "workdir", network = "allow", allow = [%q], allow_agent_api = false }`, listed), listed, other), daemonArgs...)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, f.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	events, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.MustRun("start", "allowed")
	if got, want := waitResult(f, work), listed+" ok\n"+other+" refused\n"; got != want {
		t.Fatalf("network = allow: %q, want %q", got, want)
	}
	for {
		select {
		case ev := <-events:
			// A file refusal ("/path: fs.…") is an event too where another
			// test has the kernel's audit on meanwhile: only hosts count here.
			if ev.Kind != api.EventSandboxDenied || ev.Unit != "allowed" || strings.HasPrefix(ev.Message, "/") {
				continue
			}
			if !strings.HasPrefix(ev.Message, other+": ") {
				t.Fatalf("sandbox_denied names %q, want %s", ev.Message, other)
			}
			sb := describeSandbox(f, "allowed")
			if sb == nil || sb.Network != "netns+proxy" || sb.Denied != 1 || sb.LastDenied != other {
				t.Fatalf("describe's sandbox: %+v", sb)
			}
			return
		case <-ctx.Done():
			t.Fatal("no sandbox_denied event")
		}
	}
}

// The agent's `harness mcp` reaches the daemon's socket from inside the
// sandbox (fs = "workdir", network = "none"): an initialize over it is
// answered.
func TestScenario_SandboxedHarnessStillReachesTheDaemonOverMCP(t *testing.T) {
	needSandbox(t, true)
	dir := testenv.DirOutsideTmp(t, "he-") // a private /tmp, the harness binary bound back read-only
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	script := fmt.Sprintf("printf '%%s\\n' '%s' | timeout 20 %s mcp > result 2>&1; touch done; exec sleep 600", init, harnessBin)
	f := newFleetIn(t, filepath.Join(dir, "d"), fmt.Sprintf("[harness.mcpbox]\ncmd = \"sh\"\nargs = [\"-c\", %q]\nworkdir = %q\nstop_grace = 1\nsandbox = { fs = \"workdir\", network = \"none\" }\n", script, work))
	f.MustRun("start", "mcpbox")
	if got := waitResult(f, work); !strings.Contains(got, `"serverInfo"`) {
		t.Fatalf("harness mcp from inside the sandbox: %q", got)
	}
	if sb := describeSandbox(f, "mcpbox"); sb == nil || sb.Tmp != sandbox.TmpLevelMount {
		t.Fatalf("describe's sandbox: %+v", sb)
	}
}

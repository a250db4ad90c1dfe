package interop

import (
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// conformanceScenarios classifies every server scenario of the pinned
// @modelcontextprotocol/conformance (interop/conformance/package-lock.json).
// "" means it applies to the daemon and must pass; otherwise the text says
// why it does not apply. A scenario a new version adds fails the test until
// it is classified here.
//
// Most scenarios that do not apply call test-only tools, resources or
// prompts that the suite expects a server to implement for it; the daemon's
// tools are its facade and its upstreams' (namespaced KEY__tool), and it
// serves no resources. Three of them pass anyway, vacuously, so they are not
// counted as passes.
var conformanceScenarios = map[string]string{
	"server-initialize":           "",
	"logging-set-level":           "",
	"ping":                        "",
	"tools-list":                  "",
	"server-sse-multiple-streams": "",
	"prompts-list":                "", // with the markdown prompts in interop/conformance/prompts
	"prompts-get-simple":          "",
	"prompts-get-with-args":       "",
	"dns-rebinding-protection":    "",

	"completion-complete":           "no completions: the daemon does not declare the capability (DESIGN §10), so a client may not call completion/complete",
	"tools-call-simple-text":        "test-only tool test_simple_text; passes vacuously (the unknown_tool refusal is text content)",
	"tools-call-error":              "test-only tool test_error_handling; passes vacuously (the unknown_tool refusal has isError)",
	"tools-call-image":              "test-only tool test_image_content",
	"tools-call-audio":              "test-only tool test_audio_content",
	"tools-call-embedded-resource":  "test-only tool test_embedded_resource",
	"tools-call-mixed-content":      "test-only tool test_multiple_content_types",
	"tools-call-with-logging":       "test-only tool test_tool_with_logging",
	"tools-call-with-progress":      "test-only tool test_tool_with_progress",
	"tools-call-sampling":           "test-only tool test_sampling; the daemon never samples",
	"tools-call-elicitation":        "test-only tool test_elicitation; the daemon never elicits",
	"json-schema-2020-12":           "test-only tool json_schema_2020_12_tool",
	"elicitation-sep1034-defaults":  "test-only tool test_elicitation_sep1034_defaults; the daemon never elicits",
	"elicitation-sep1330-enums":     "test-only tool test_elicitation_sep1330_enums; the daemon never elicits",
	"server-sse-polling":            "test-only tool test_reconnection (and pending in the suite itself)",
	"resources-list":                "no resources (DESIGN §10 serves tools and prompts); passes vacuously on the empty list",
	"resources-read-text":           "no resources: test-only test://static-text",
	"resources-read-binary":         "no resources: test-only test://static-binary",
	"resources-templates-read":      "no resources: test-only template test://template/{id}/data",
	"resources-subscribe":           "no resources to subscribe to",
	"resources-unsubscribe":         "no resources to subscribe to",
	"prompts-get-embedded-resource": "prompts are markdown text: no embedded resource content",
	"prompts-get-with-image":        "prompts are markdown text: no image content",
}

// TestConformance_OfficialSuiteAgainstTheHTTPEndpoint runs the official MCP
// conformance suite against a real daemon's Streamable HTTP endpoint: every
// scenario that applies must pass by the suite's own verdict.
//
// The suite cannot send a bearer token, so it talks to a loopback reverse
// proxy that adds the operator token and passes the rest through unchanged,
// Host and Origin included; that is also the reverse-proxy set-up the
// endpoint's host-name check allows.
func TestConformance_OfficialSuiteAgainstTheHTTPEndpoint(t *testing.T) {
	dir := filepath.Join(interopDir, "conformance")
	node := filepath.Join(dir, "node_modules", ".bin", "node")
	cli := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, p := range []string{node, cli} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: run npm ci in interop/conformance (scripts/test does): %v", p, err)
		}
	}
	suite := func(args ...string) (string, error) {
		c := exec.Command(node, append([]string{cli}, args...)...)
		c.Dir = t.TempDir() // the suite may write results/ into its working directory
		c.Env = cleanEnv()
		out, err := c.CombinedOutput()
		return string(out), err
	}

	// The pinned suite's scenarios are exactly the ones classified above.
	listed, err := suite("list", "--server")
	if err != nil {
		t.Fatalf("conformance list: %v\n%s", err, listed)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s+- (\S+)`).FindAllStringSubmatch(listed, -1) {
		names = append(names, m[1])
		if _, ok := conformanceScenarios[m[1]]; !ok {
			t.Errorf("the suite has a scenario this test does not classify: %s", m[1])
		}
	}
	for name := range conformanceScenarios {
		if !slices.Contains(names, name) {
			t.Errorf("classified scenario %s is not in the suite", name)
		}
	}

	f := newFleet(t, fmt.Sprintf("[daemon]\nmcp_http = \"127.0.0.1:0\"\n\n[mcp.prompts]\npaths = [%q]\n", filepath.Join(dir, "prompts")))
	var info struct {
		MCPURL string `json:"mcp_url"`
	}
	f.mustJSON(&info, "daemon-info")
	tok, _, code := f.run("--state-dir", f.state, "mcp", "token")
	if code != 0 {
		t.Fatalf("harness mcp token: exit %d", code)
	}
	endpoint := authProxy(t, info.MCPURL, strings.TrimSpace(tok))

	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n, why := range conformanceScenarios {
			if why == "" && !yield(n) {
				return
			}
		}
	}) {
		t.Run(name, func(t *testing.T) {
			results := t.TempDir()
			start := time.Now()
			out, err := suite("server", "--url", endpoint, "--scenario", name, "-o", results)
			if err != nil {
				t.Fatalf("the suite fails %s (%v):\n%s\ndaemon log:\n%s", name, err, out, f.log())
			}
			checks := readChecks(t, results)
			passed := 0
			for _, c := range checks {
				switch c.Status {
				case "SUCCESS":
					passed++
				case "FAILURE":
					t.Errorf("%s: %s", c.ID, c.ErrorMessage)
				case "WARNING":
					t.Logf("warning %s: %s", c.ID, c.ErrorMessage)
				}
			}
			if passed == 0 {
				t.Errorf("no check passed:\n%s", out)
			}
			t.Logf("%d checks passed in %v", passed, time.Since(start).Round(time.Millisecond))
		})
	}
}

type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// readChecks reads the checks.json the suite wrote under dir.
func readChecks(t *testing.T, dir string) []conformanceCheck {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	if len(files) != 1 {
		t.Fatalf("want one checks.json under %s, found %v", dir, files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var checks []conformanceCheck
	if err := json.Unmarshal(b, &checks); err != nil {
		t.Fatalf("%s: %v", files[0], err)
	}
	return checks
}

// authProxy is a reverse proxy on loopback in front of the endpoint at
// target that adds the bearer token and passes everything else through,
// Host included, so the endpoint's own Host and Origin checks are what the
// suite meets.
func authProxy(t *testing.T, target, token string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = ""
	tl := &testLog{t: t}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host
			r.Out.Header.Set("Authorization", "Bearer "+token)
		},
		FlushInterval: -1, // SSE events pass one by one
		// Clients that hang up mid-stream are routine for the suite.
		ErrorLog: log.New(tl, "auth proxy: ", 0),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second, ErrorLog: rp.ErrorLog}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-done; tl.close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

// testLog sends a logger's lines to the test log until it is closed: a
// proxy handler may still be finishing after the server has closed.
type testLog struct {
	t      *testing.T
	mu     sync.Mutex
	closed bool
}

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testLog) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}

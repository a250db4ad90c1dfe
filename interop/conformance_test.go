//go:build interop

package interop

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
)

// conformanceScenarios classifies every server scenario of the pinned
// @modelcontextprotocol/conformance (interop/conformance/package-lock.json).
// "" means it applies to the daemon and must pass; otherwise the text says
// why it does not apply. A scenario a new version adds fails the test until
// it is classified here.
//
// The scenarios that ask for test-only tools, resources and prompts are
// served by a test upstream, confupstream.mjs, through the broker: harness
// offers them namespaced (conf__test_simple_text, harness://conf/test://…),
// while the suite calls the bare names, so the test's proxy in front of the
// endpoint maps the suite's names and URIs onto harness's and back
// (confRewrite), and changes nothing else: content, schemas, progress,
// logging, elicitation and sampling are the upstream's, through harness.
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

	// Served by confupstream.mjs through the broker.
	"tools-call-simple-text":        "",
	"tools-call-error":              "",
	"tools-call-image":              "",
	"tools-call-audio":              "",
	"tools-call-embedded-resource":  "",
	"tools-call-mixed-content":      "",
	"tools-call-with-logging":       "",
	"tools-call-with-progress":      "",
	"tools-call-sampling":           "",
	"tools-call-elicitation":        "",
	"json-schema-2020-12":           "",
	"elicitation-sep1034-defaults":  "",
	"elicitation-sep1330-enums":     "",
	"resources-list":                "",
	"resources-read-text":           "",
	"resources-read-binary":         "",
	"resources-templates-read":      "",
	"resources-subscribe":           "",
	"resources-unsubscribe":         "",
	"prompts-get-embedded-resource": "",
	"prompts-get-with-image":        "",
	// harness declares completions because conf does, and forwards
	// completion/complete of conf's prompt to it (docs/design/mcp.md, upstreams).
	"completion-complete": "",

	"server-sse-polling": "tests the endpoint's own SSE stream being closed mid-call and resumed (SEP-1699), which the daemon's go-sdk handler does not do; an upstream's tool cannot close the daemon's stream (and the scenario is pending in the suite itself)",
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
		testenv.File(t, p, "the MCP conformance suite's npm packages (npm ci in interop/conformance)")
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

	f := newFleet(t, fmt.Sprintf("[daemon]\nmcp_http = \"127.0.0.1:0\"\n\n[mcp.prompts]\npaths = [%q]\n\n[mcp.conf]\ncmd = %q\nargs = [%q]\n",
		filepath.Join(dir, "prompts"), nodeBin, filepath.Join(interopDir, "confupstream.mjs")))
	f.WaitFor("the conformance upstream to run", 60*time.Second, func() bool {
		var st []struct{ Key, State string }
		f.MustJSON(&st, "mcp", "status")
		return len(st) == 1 && st[0].State == "running"
	})
	markdown, _ := filepath.Glob(filepath.Join(dir, "prompts", "*.md"))
	own := map[string]bool{}
	for _, m := range markdown {
		own[strings.TrimSuffix(filepath.Base(m), ".md")] = true
	}
	var info struct {
		MCPURL string `json:"mcp_url"`
	}
	f.MustJSON(&info, "daemon-info")
	tok, _, code := f.Run("--state-dir", f.State, "mcp", "token")
	if code != 0 {
		t.Fatalf("harness mcp token: exit %d", code)
	}
	endpoint := authProxy(t, info.MCPURL, strings.TrimSpace(tok), confRewrite("conf", own))

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
				t.Fatalf("the suite fails %s (%v):\n%s\ndaemon log:\n%s", name, err, out, f.Log())
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
			if name == "completion-complete" {
				// The values are conf's for what the suite typed ("test"):
				// the completion went through harness to the upstream.
				for _, c := range checks {
					var d struct {
						Result struct {
							Completion struct{ Values []string }
						}
					}
					if err := json.Unmarshal(c.Details, &d); err != nil || !slices.Equal(d.Result.Completion.Values, []string{"test-one", "test-two"}) {
						t.Errorf("%s: details %s (%v), want conf's values for \"test\"", c.ID, c.Details, err)
					}
				}
			}
			t.Logf("%d checks passed in %v", passed, time.Since(start).Round(time.Millisecond))
		})
	}
}

type conformanceCheck struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"`
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
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
func authProxy(t *testing.T, target, token string, rw *rewrite) string {
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
			if rw != nil {
				rw.request(r.Out)
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			if rw != nil {
				rw.response(resp)
			}
			return nil
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

// rewrite maps the conformance suite's bare names onto one upstream's
// namespace in requests, and back in responses.
type rewrite struct {
	key string
	own map[string]bool // prompts harness serves itself (markdown)
}

// confRewrite maps names and URIs onto upstream key: tools/call names
// (except the facade's harness_*), prompts/get names (except harness's own
// prompts), test:// resource URIs, and completion/complete refs (every
// prompt name: harness's own prompts have no completions, and conf lists a
// prompt of the name the suite completes).
func confRewrite(key string, own map[string]bool) *rewrite {
	return &rewrite{key: key, own: own}
}

func (rw *rewrite) request(r *http.Request) {
	if r.Body == nil || r.Method != http.MethodPost {
		return
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return
	}
	var msg map[string]any
	if json.Unmarshal(body, &msg) == nil {
		params, _ := msg["params"].(map[string]any)
		switch msg["method"] {
		case "tools/call":
			if name, ok := params["name"].(string); ok && !strings.HasPrefix(name, "harness_") {
				params["name"] = rw.key + "__" + name
			}
		case "prompts/get":
			if name, ok := params["name"].(string); ok && !rw.own[name] {
				params["name"] = rw.key + "__" + name
			}
		case "completion/complete":
			ref, _ := params["ref"].(map[string]any)
			if name, ok := ref["name"].(string); ok && ref["type"] == "ref/prompt" {
				ref["name"] = rw.key + "__" + name
			}
			if uri, ok := ref["uri"].(string); ok && ref["type"] == "ref/resource" && strings.HasPrefix(uri, "test://") {
				ref["uri"] = "harness://" + rw.key + "/" + uri
			}
		case "resources/read", "resources/subscribe", "resources/unsubscribe":
			if uri, ok := params["uri"].(string); ok && strings.HasPrefix(uri, "test://") {
				params["uri"] = "harness://" + rw.key + "/" + uri
			}
		}
		if b, err := json.Marshal(msg); err == nil {
			body = b
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
}

// response strips the namespace from names and URIs, line by line, so
// event streams pass event by event.
func (rw *rewrite) response(resp *http.Response) {
	ct := resp.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "application/json") && !strings.HasPrefix(ct, "text/event-stream") {
		return
	}
	resp.Body = &lineRewriter{r: bufio.NewReader(resp.Body), c: resp.Body, fix: strings.NewReplacer(
		`"`+rw.key+`__`, `"`, `"harness://`+rw.key+`/`, `"`).Replace}
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
}

type lineRewriter struct {
	r   *bufio.Reader
	c   io.Closer
	fix func(string) string
	buf []byte
}

func (l *lineRewriter) Read(p []byte) (int, error) {
	for len(l.buf) == 0 {
		line, err := l.r.ReadString('\n')
		l.buf = append(l.buf, l.fix(line)...)
		if err != nil {
			if len(l.buf) == 0 {
				return 0, err
			}
			break
		}
	}
	n := copy(p, l.buf)
	l.buf = l.buf[n:]
	return n, nil
}

func (l *lineRewriter) Close() error { return l.c.Close() }

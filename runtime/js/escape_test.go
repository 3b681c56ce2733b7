package js_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/runtime/js"
	"github.com/lathe-tools/lathe/tool"
)

// The escape suite: what a hostile tool file tries, and what it must get.

func TestMemoryBomb(t *testing.T) {
	for name, body := range map[string]string{
		// QuickJS refuses a string this long before allocating it.
		"repeat":  `return "x".repeat(2 ** 30);`,
		"arrays":  `const a = []; for (;;) a.push(new Array(100000).fill(a.length));`,
		"strings": `let s = "x"; const keep = []; for (;;) { s = s + s.slice(0, 1 << 20) + keep.length; keep.push(s); }`,
		"objects": `const m = new Map(); for (let i = 0; ; i++) m.set(i, { i, s: "v" + i });`,
	} {
		t.Run(name, func(t *testing.T) {
			tl := newTool(t, "bomb", `{ description: "bomb", execute() { `+body+` } }`, "", host.Permissions{})
			start := time.Now()
			out := call(t, tl, map[string]any{}, time.Minute)
			if out.Result == nil || !out.Result.IsError {
				t.Fatalf("the bomb ended with %q, want an error", textOf(out))
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("the bomb took %s to stop", d)
			}
			text := out.Result.Text()
			if !strings.Contains(text, "memory limit of 32 MiB") && !strings.Contains(text, "invalid string length") {
				t.Errorf("the error %q does not say the memory limit stopped it", text)
			}
			// The runtime goes on: the next call of the same tool's
			// runtime works.
			echo := newTool(t, "alive", `{ execute(a) { return "alive " + a.n } }`, "", host.Permissions{})
			wantText(t, call(t, echo, map[string]any{"n": 1}, time.Minute), "alive 1")
		})
	}
}

// A tool that catches the out-of-memory error still cannot keep what it
// allocated: the limit held, and what it returns is all it gets.
func TestMemoryBombCaught(t *testing.T) {
	tl := newTool(t, "catcher", `{ execute() {
		let a = [];
		try { for (;;) a.push(new Array(100000).fill(1)); } catch (e) { a = null; return "caught " + e.message; }
	} }`, "", host.Permissions{})
	out := call(t, tl, map[string]any{}, time.Minute)
	if out.Result == nil || (out.Result.Text() != "caught out of memory" && !strings.Contains(out.Result.Text(), "memory limit")) {
		t.Fatalf("got %q, want the caught error or the memory limit", textOf(out))
	}
}

func TestInfiniteLoops(t *testing.T) {
	for name, body := range map[string]string{
		"while":       `while (true) {}`,
		"after_await": `await null; for (;;) {}`,
		"catch_all":   `for (;;) { try { while (true) {} } catch (e) {} finally { continue; } }`,
		"microtasks":  `const spin = () => Promise.resolve().then(spin); spin(); await new Promise(() => {});`,
		"recursion":   `const f = () => { try { f(); } catch (e) {} f(); }; f();`,
	} {
		t.Run(name, func(t *testing.T) {
			if name == "recursion" && raceEnabled {
				// The call still ends at its deadline, but the engine
				// goes on for minutes under the race detector before it
				// sees the interrupt, burning a core the other tests
				// need; the run without it covers the case.
				t.Skip("the race detector slows the engine's stack traces too much for this case")
			}
			tl := newTool(t, "loop", `{ async execute() { `+body+` } }`, "", host.Permissions{})
			start := time.Now()
			out := call(t, tl, map[string]any{}, 300*time.Millisecond)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the call returned %s after it started, with a deadline of 300ms", d)
			}
			if out.Result == nil || !out.Result.IsError {
				t.Fatalf("the loop ended with %q, want an error", textOf(out))
			}
			if k := out.Result.ErrorKind; k != tool.KindTimeout && k != tool.KindRuntimeFailure {
				t.Errorf("kind %s (%q), want timeout (or runtime_failure for a stack the engine refused)", k, out.Result.Text())
			}
		})
	}
}

func TestPromiseThatNeverSettles(t *testing.T) {
	tl := newTool(t, "forever", `{ execute() { return new Promise(() => {}); } }`, "", host.Permissions{})
	start := time.Now()
	out := call(t, tl, map[string]any{}, time.Minute)
	wantKind(t, out, tool.KindRuntimeFailure, "never settled")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a promise that cannot settle held the call %s", d)
	}
}

func TestNoNodeGlobals(t *testing.T) {
	tl := newTool(t, "globals", `{ execute() {
		const names = ["require", "process", "module", "exports", "Buffer", "fs", "std", "os", "setTimeout",
			"__lathe_host", "__lathe_settle", "__lathe_console", "fetch", "XMLHttpRequest", "WebAssembly"];
		return names.filter((n) => typeof globalThis[n] !== "undefined").join(",");
	} }`, "", host.Permissions{})
	wantText(t, call(t, tl, map[string]any{}, time.Minute), "")
}

// One call tampers with every shared object it can reach; the next call of
// the same runtime must find them as they were.
func TestTamperingDoesNotOutliveTheCall(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("pristine"), 0o600)
	tl := newTool(t, "tamper", `{ async execute(args, ctx) {
		if (args.tamper) {
			Object.prototype.polluted = "yes";
			Array.prototype.push = () => { throw new Error("tampered push"); };
			JSON.stringify = () => "tampered";
			JSON.parse = () => ({ r: "tampered" });
			Promise.prototype.then = function () { throw new Error("tampered then"); };
			globalThis.leak = "left behind";
			try { ctx.fs.readFile = () => "forged"; } catch (e) {}
			try { Object.getPrototypeOf(ctx).readFile = () => "forged"; } catch (e) {}
			try { Object.getPrototypeOf(ctx.fs).readFile = () => "forged"; } catch (e) {}
			return "tampered";
		}
		const seen = [];
		if (({}).polluted !== undefined) seen.push("Object.prototype");
		if (typeof globalThis.leak !== "undefined") seen.push("global");
		if (JSON.stringify({a: 1}) !== '{"a":1}') seen.push("JSON");
		if (ctx.fs.readFile("a.txt") !== "pristine") seen.push("ctx.fs");
		return seen.length ? "saw " + seen.join(",") : "pristine";
	} }`, dir, host.Permissions{Read: []string{"."}})
	wantText(t, call(t, tl, map[string]any{"tamper": true}, time.Minute), "tampered")
	wantText(t, call(t, tl, map[string]any{"tamper": false}, time.Minute), "pristine")
}

// A tool that replaces the built-ins the bridge might use, within its own
// call, still gets only what its permissions allow.
func TestTamperingCannotWidenTheHost(t *testing.T) {
	parent := t.TempDir()
	ws := filepath.Join(parent, "ws")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(parent, "secret"), []byte("SECRET"), 0o600)
	tl := newTool(t, "tamper", `{ execute(args, ctx) {
		JSON.stringify = () => '{"path":"../secret"}';
		JSON.parse = () => ({ r: "forged" });
		Object.prototype.toJSON = function () { return { path: "../secret" }; };
		try { return ctx.fs.readFile("ok.txt"); } catch (e) { return "refused: " + e.message; }
	} }`, ws, host.Permissions{Read: []string{"ok.txt"}})
	out := call(t, tl, map[string]any{}, time.Minute)
	if out.Result == nil || strings.Contains(out.Result.Text(), "SECRET") {
		t.Fatalf("the tampered bridge read outside the workspace: %q", textOf(out))
	}
}

func TestHostTraversal(t *testing.T) {
	parent := t.TempDir()
	ws := filepath.Join(parent, "ws")
	os.Mkdir(ws, 0o700)
	secret := filepath.Join(parent, "secret")
	os.WriteFile(secret, []byte("SECRET"), 0o600)
	os.WriteFile(filepath.Join(ws, "inside.txt"), []byte("inside"), 0o600)
	if err := os.Symlink(secret, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	tl := newTool(t, "walk", `{ execute(args, ctx) {
		try { return "read: " + ctx.fs.readFile(args.path); } catch (e) { return "refused " + e.code + ": " + e.message; }
	} }`, ws, host.Permissions{Read: []string{"**"}, Write: []string{"**"}})
	wantText(t, call(t, tl, map[string]any{"path": "inside.txt"}, time.Minute), "read: inside")
	for _, p := range []string{"../secret", secret, "link", "./a/../../secret", "/etc/passwd"} {
		out := call(t, tl, map[string]any{"path": p}, time.Minute)
		if got := textOf(out); !strings.HasPrefix(got, "refused ") || strings.Contains(got, "SECRET") {
			t.Errorf("readFile(%q) = %q, want a refusal", p, got)
		}
	}
	w := newTool(t, "write", `{ execute(args, ctx) {
		try { ctx.fs.writeFile(args.path, "owned"); return "wrote"; } catch (e) { return "refused " + e.code; }
	} }`, ws, host.Permissions{Read: []string{"**"}, Write: []string{"**"}})
	for _, p := range []string{"../planted", filepath.Join(parent, "planted2"), "link"} {
		if got := textOf(call(t, w, map[string]any{"path": p}, time.Minute)); got == "wrote" {
			t.Errorf("writeFile(%q) wrote", p)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "SECRET" {
		t.Errorf("the secret outside the workspace was changed: %q", b)
	}
	for _, f := range []string{"planted", "planted2"} {
		if _, err := os.Stat(filepath.Join(parent, f)); err == nil {
			t.Errorf("%s was written outside the workspace", f)
		}
	}
}

func TestFetchNotGranted(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("hello from the server"))
	}))
	defer srv.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer other.Close()
	src := `{ execute(args, ctx) {
		try { const r = ctx.fetch(args.url); return r.status + " " + r.body; } catch (e) { return "refused " + e.code + ": " + e.message; }
	} }`
	denied := newTool(t, "fetch", src, t.TempDir(), host.Permissions{Net: []string{strings.TrimPrefix(other.URL, "http://")}})
	got := textOf(call(t, denied, map[string]any{"url": srv.URL}, time.Minute))
	if !strings.HasPrefix(got, "refused -32001") || hits.Load() != 0 {
		t.Fatalf("fetch of a host not granted: %q, %d requests reached it", got, hits.Load())
	}
	// The same fetch works when granted, so the refusal above was the
	// permission's.
	granted := newTool(t, "fetch", src, t.TempDir(), host.Permissions{Net: []string{strings.TrimPrefix(srv.URL, "http://")}})
	wantText(t, call(t, granted, map[string]any{"url": srv.URL}, time.Minute), "200 hello from the server")
}

// A promise chain a tool leaves running after execute settles never
// reaches the host: the write before the return happens, the one after
// does not.
func TestHostCallAfterReturn(t *testing.T) {
	dir := t.TempDir()
	tl := newTool(t, "late", `{ execute(args, ctx) {
		ctx.fs.writeFile("early.txt", "x");
		(async () => {
			for (let i = 0; i < 5; i++) await null;
			try { ctx.fs.writeFile("late.txt", "x"); } catch (e) { console.log("late write refused: " + e.message); }
		})();
		return "returned";
	} }`, dir, host.Permissions{Write: []string{"."}})
	wantText(t, call(t, tl, map[string]any{}, time.Minute), "returned")
	if _, err := os.Stat(filepath.Join(dir, "early.txt")); err != nil {
		t.Fatalf("the write before the return did not happen: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "late.txt")); err == nil {
		t.Error("a host call made after execute returned was run")
	}
}

func TestNoHost(t *testing.T) {
	tl := newTool(t, "nohost", `{ execute(args, ctx) {
		try { ctx.fs.readFile("x"); return "read"; } catch (e) { return e.message; }
	} }`, "", host.Permissions{})
	out := call(t, tl, map[string]any{}, time.Minute)
	if !strings.Contains(textOf(out), "no host") {
		t.Errorf("got %q, want it to say there is no host", textOf(out))
	}
}

func TestEvalBindingAfterReturn(t *testing.T) {
	var late atomic.Int32
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := js.Eval(ctx, `
		(async () => { for (let i = 0; i < 5; i++) await null; try { tools.mark("late"); } catch (e) {} })();
		tools.mark("early");
		return 1;`, js.EvalOptions{Bindings: map[string]map[string]js.Func{"tools": {
		"mark": func(ctx context.Context, arg json.RawMessage) (json.RawMessage, error) {
			if string(arg) == `"late"` {
				late.Add(1)
			}
			return nil, nil
		},
	}}})
	if err != nil || string(res) != "1" {
		t.Fatalf("Eval = %s, %v", res, err)
	}
	if late.Load() != 0 {
		t.Error("a binding called after the script returned was run")
	}
}

func TestEvalDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := js.Eval(ctx, `for (;;) {}`, js.EvalOptions{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the deadline", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Eval returned %s after start, past its deadline of 200ms", d)
	}
}

// Closing the runtime ends the calls it runs, promptly, and refuses new
// ones.
func TestCloseWhileRunning(t *testing.T) {
	rt, err := js.New(module(`{ execute() { for (;;) {} } }`), js.Options{File: "spin.js"})
	if err != nil {
		t.Fatal(err)
	}
	def := &tool.Definition{Name: "spin"}
	done := make(chan error, 1)
	go func() {
		_, err := rt.Execute(context.Background(), def, &tool.Call{Name: "spin"})
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	rt.Close()
	select {
	case err := <-done:
		var te *tool.Error
		if !errors.As(err, &te) || te.Kind != tool.KindRuntimeFailure || !strings.Contains(te.Message, "closed") {
			t.Errorf("a call running when the runtime closed: %v, want a runtime_failure saying it was closed", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not return after its runtime closed")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %s", d)
	}
	if _, err := rt.Execute(context.Background(), def, &tool.Call{Name: "spin"}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("a call after Close: %v, want the runtime closed", err)
	}
}

// The limit refuses only what is past it: a tool that needs a few MiB, well
// under its 32 MiB, gets them.
func TestMemoryUnderTheLimit(t *testing.T) {
	tl := newTool(t, "modest", `{ execute() {
		const a = [];
		for (let i = 0; i < 40; i++) a.push(new Array(25000).fill(i));
		return "kept " + a.length;
	} }`, "", host.Permissions{})
	wantText(t, call(t, tl, map[string]any{}, time.Minute), "kept 40")
}

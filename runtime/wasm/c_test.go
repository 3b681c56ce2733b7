package wasm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/internal/wasmbuild"
	"github.com/lathe-tools/lathe/runtime/wasm"
	"github.com/lathe-tools/lathe/runtimetest"
	"github.com/lathe-tools/lathe/tool"
)

// The tools of this file are written in C (testdata/c, with sdk/c), on the protocol
// helper lathe.h, and built with clang for wasm32-wasi by each test that
// needs them.

// cModules are the C tools, built once per run into a directory beside
// the run's base: the conformance suite's tools, word_count, and the example
// line_count of examples/wasm-c.
type cModules struct {
	conformance, wordCount, lineCount, head string
}

var (
	cOnce  sync.Once
	cBuilt cModules
	cErr   error
)

// cSDK is where lathe's C helper for tool authors is: lathe.h and lathe.c.
const cSDK = "../../sdk/c"

func buildC(t *testing.T) cModules {
	t.Helper()
	wasmbuild.HaveC(t)
	cOnce.Do(func() {
		// Beside base, out of the write scope of every test (a module
		// that could rewrite itself is refused).
		dir := filepath.Join(filepath.Dir(base), "c")
		if cErr = os.Mkdir(dir, 0o755); cErr != nil {
			return
		}
		build := func(out string, srcs ...string) string {
			out = filepath.Join(dir, out)
			if cErr == nil {
				cErr = wasmbuild.BuildC(out, srcs...)
			}
			return out
		}
		cBuilt = cModules{
			conformance: build("conformance.wasm", "-I"+cSDK, "testdata/c/conformance.c", cSDK+"/lathe.c"),
			wordCount:   build("wc.wasm", "-I"+cSDK, "testdata/c/wc.c", cSDK+"/lathe.c"),
			lineCount:   build("line_count.wasm", "-I"+cSDK, "../../examples/wasm-c/line_count.c", cSDK+"/lathe.c"),
			head:        build("head.wasm", "-I"+cSDK, "../../examples/wasm-c/head.c", cSDK+"/lathe.c"),
		}
	})
	if cErr != nil {
		t.Fatal(cErr)
	}
	return cBuilt
}

// cTool returns the tool name of the module at path, with a host of its
// own that opts.Perms configure.
func cTool(t *testing.T, path, name string, opts wasm.Options) tool.Tool {
	t.Helper()
	return cToolLimits(t, path, name, opts, host.Limits{})
}

// cToolLimits is cTool with a host whose requests limits bound.
func cToolLimits(t *testing.T, path, name string, opts wasm.Options, limits host.Limits) tool.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := host.New(host.Config{Tool: name, Workspace: opts.Workspace, Perms: opts.Perms, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	opts.Host = h
	tools, leftOut, err := shared.Tools(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(leftOut) > 0 {
		t.Fatalf("tools left out: %v", leftOut)
	}
	for _, tl := range tools {
		if tl.Definition.Name == name {
			return tl
		}
	}
	t.Fatalf("%s has no tool %s", path, name)
	return tool.Tool{}
}

// TestConformanceC runs the conformance suite against the tools written in
// C, with the host's own checks, as TestConformance does for Go's: the
// workspace holds every temporary directory of the run, so that the marker
// files the suite makes are inside it, and writable.
func TestConformanceC(t *testing.T) {
	m := buildC(t)
	runtimetest.Run(t, func(t *testing.T, name string) tool.Tool {
		return cTool(t, m.conformance, name, wasm.Options{Workspace: base, Perms: host.Permissions{Write: []string{"."}}})
	})
}

// TestRequestC checks the request a module reads, as a tool in C sees it:
// the protocol's fields, and context.host, which says the host API is
// there.
func TestRequestC(t *testing.T) {
	m := buildC(t)
	ws := t.TempDir()
	tl := cTool(t, m.conformance, "request", wasm.Options{Workspace: ws})
	e := lathe.New(lathe.Options{})
	t.Cleanup(func() { e.Close() })
	if err := e.Register(tl); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := e.Call(ctx, &tool.Call{ID: "call-7", Name: "request", Arguments: json.RawMessage(`{"x":"\"y\""}`)})
	if out.Result == nil || out.Result.IsError {
		t.Fatalf("request: %s", text(out))
	}
	var got map[string]any
	if err := json.Unmarshal(out.Result.Structured, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"protocol": 1.0, "action": "run", "tool": "request", "arguments": map[string]any{"x": `"y"`},
		"context": map[string]any{"root": ws, "call_id": "call-7", "host": 1.0}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the module read %v, want %v", got, want)
	}
}

// TestMemoryNotShared checks that no call sees memory an earlier call
// wrote, though the runtime reuses the memories of finished calls: one
// tool fills the memory it grows with a pattern, and another, in later
// calls on the same runtime, finds only zeros in the memory it grows.
func TestMemoryNotShared(t *testing.T) {
	m := buildC(t)
	ws := t.TempDir()
	scribble := cTool(t, m.conformance, "scribble", wasm.Options{Workspace: ws})
	zeroes := cTool(t, m.conformance, "zeroes", wasm.Options{Workspace: ws})
	e := lathe.New(lathe.Options{})
	t.Cleanup(func() { e.Close() })
	if err := e.Register(scribble, zeroes); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := json.RawMessage(`{"pages":64}`)
	for i := range 5 {
		for _, name := range []string{"scribble", "zeroes"} {
			out := e.Call(ctx, &tool.Call{Name: name, Arguments: args})
			if out.Result == nil || out.Result.IsError {
				t.Fatalf("round %d, %s: %s", i, name, text(out))
			}
		}
	}
}

// TestExampleC runs the C example of examples/wasm-c, which reads files
// through WASI: a file its read permission names is counted; one it does
// not name, though it is in the workspace and readable to lathe, and one
// outside the workspace are refused.
func TestExampleC(t *testing.T) {
	m := buildC(t)
	ws := t.TempDir()
	for name, content := range map[string]string{"src/a.txt": "one\ntwo\nthree\n", "secret.txt": "key\n"} {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tl := cTool(t, m.lineCount, "line_count", wasm.Options{Workspace: ws, Perms: host.Permissions{Read: []string{"src/"}}})
	out := call(t, tl, map[string]any{"path": "src/a.txt"})
	if out.Result == nil || out.Result.IsError || out.Result.Text() != "3 lines" ||
		string(out.Result.Structured) != `{"lines":3,"bytes":14}` {
		t.Fatalf("src/a.txt: %s (structured %s), want 3 lines and 14 bytes", text(out), out.Result.Structured)
	}
	for _, p := range []string{"secret.txt", filepath.Join(ws, "secret.txt"), "src/../secret.txt", outside,
		"../" + filepath.Base(filepath.Dir(outside)) + "/outside.txt"} {
		out := call(t, tl, map[string]any{"path": p})
		if out.Result == nil || !out.Result.IsError || out.Result.ErrorKind != tool.KindToolError ||
			!strings.Contains(out.Result.Text(), "cannot open") {
			t.Errorf("%s: %s, want the tool to say it cannot open it", p, text(out))
		}
	}
	// The same read works once the permissions name the file: the
	// refusals in the workspace are the permissions', not the tool's own
	// failure. (Nothing outside the workspace can be granted.)
	wide := cTool(t, m.lineCount, "line_count", wasm.Options{Workspace: ws, Perms: host.Permissions{Read: []string{"."}}})
	for _, p := range []string{"secret.txt", filepath.Join(ws, "secret.txt")} {
		if out := call(t, wide, map[string]any{"path": p}); out.Result == nil || out.Result.IsError || out.Result.Text() != "1 lines" {
			t.Errorf("%s with a permission for it: %s, want 1 lines", p, text(out))
		}
	}
}

// bareModule runs a module under wazero alone, with no files: the
// plainest host there is, for testing the C helper itself.
type bareModule struct {
	r  wazero.Runtime
	cm wazero.CompiledModule
}

func newBareModule(t *testing.T, path string) *bareModule {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
	t.Cleanup(func() { r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	wasm, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := r.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	return &bareModule{r: r, cm: cm}
}

// run runs the module once with stdin and returns its standard output. A
// tool may exit 1 after an error answer, so its exit status is not
// checked: the answer is.
func (m *bareModule) run(t *testing.T, stdin []byte) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	mod, _ := m.r.InstantiateModule(ctx, m.cm, wazero.NewModuleConfig().WithName("").
		WithStdin(bytes.NewReader(stdin)).WithStdout(&out))
	if ctx.Err() != nil {
		t.Fatalf("the module did not end within 30s on %.200q", stdin)
	}
	if mod != nil {
		mod.Close(ctx)
	}
	return out.Bytes()
}

// TestCHelperRequests feeds the C helper requests that a hostile model or a
// broken host could make it see, and checks that each gets a well-formed
// answer of the right kind: the helper reads only well-formed JSON, bounds
// its nesting, decodes every escape, and writes only valid JSON and UTF-8.
func TestCHelperRequests(t *testing.T) {
	m := newBareModule(t, buildC(t).conformance)
	deep := strings.Repeat("[", 100000)
	for _, tc := range []struct {
		name, req string
		want      map[string]any // the answer, or nil for only its type
		wantType  string
	}{
		{"escapes", `{"protocol":1,"action":"run","tool":"echo","arguments":{"text":"h\u00e9 \"q\" \\ \/ \b\f\n\r\t \ud83d\ude00 x\u0000y"}}`,
			map[string]any{"type": "success", "content": "hé \"q\" \\ / \b\f\n\r\t 😀 x\x00y",
				"structured": map[string]any{"text": "hé \"q\" \\ / \b\f\n\r\t 😀 x\x00y"}}, ""},
		{"lone surrogates", `{"action":"run","tool":"echo","arguments":{"text":"a\ud800b\udc00c\ud83d"}}`,
			map[string]any{"type": "success", "content": "a\uFFFDb\uFFFDc\uFFFD", "structured": map[string]any{"text": "a\uFFFDb\uFFFDc\uFFFD"}}, ""},
		{"bytes that are not UTF-8", "{\"action\":\"run\",\"tool\":\"echo\",\"arguments\":{\"text\":\"\xff\xc0\x80 ok \xe2\x82\xac \xed\xa0\x80\"}}",
			map[string]any{"type": "success", "content": "\uFFFD\uFFFD\uFFFD ok € \uFFFD\uFFFD\uFFFD",
				"structured": map[string]any{"text": "\uFFFD\uFFFD\uFFFD ok € \uFFFD\uFFFD\uFFFD"}}, ""},
		{"escaped key", `{"action":"run","tool":"echo","arguments":{"te\u0078t":"k"}}`,
			map[string]any{"type": "success", "content": "k", "structured": map[string]any{"text": "k"}}, ""},
		{"the last of two members", `{"action":"run","tool":"echo","arguments":{"text":"a","text":"b"}}`,
			map[string]any{"type": "success", "content": "b", "structured": map[string]any{"text": "b"}}, ""},
		{"an integer with a zero fraction", `{"action":"run","tool":"huge","arguments":{"size":3.00}}`,
			map[string]any{"type": "success", "content": "xxx"}, ""},
		{"an integer past int64", `{"action":"run","tool":"huge","arguments":{"size":99999999999999999999}}`, nil, "error"},
		{"a fraction", `{"action":"run","tool":"huge","arguments":{"size":1.5}}`, nil, "error"},
		{"an exponent", `{"action":"run","tool":"huge","arguments":{"size":1e9}}`, nil, "error"},
		{"a wrong type", `{"action":"run","tool":"echo","arguments":{"text":5}}`, nil, "error"},
		{"arguments not an object", `{"action":"run","tool":"echo","arguments":[1]}`, nil, "error"},
		{"no action", `{"tool":"echo","arguments":{"text":"a"}}`, nil, "error"},
		{"a newer protocol", `{"protocol":2,"action":"run","tool":"echo","arguments":{"text":"a"}}`, nil, "error"},
		{"an unknown tool", `{"action":"run","tool":"rm -rf /","arguments":{}}`, nil, "error"},
		{"an unknown action", `{"action":"format_arguments","tool":"echo","arguments":{"text":"a"}}`, nil, "error"},
		{"deep nesting", deep, nil, "error"},
		{"deep nesting in an argument", `{"action":"run","tool":"echo","arguments":{"text":"a","x":` + deep + `}}`, nil, "error"},
		{"unterminated string", `{"action":"run","tool":"echo","arguments":{"text":"a}}`, nil, "error"},
		{"a raw control character", "{\"action\":\"run\",\"tool\":\"echo\",\"arguments\":{\"text\":\"a\x01\"}}", nil, "error"},
		{"a bad escape", `{"action":"run","tool":"echo","arguments":{"text":"\x41"}}`, nil, "error"},
		{"a short \\u", `{"action":"run","tool":"echo","arguments":{"text":"\u12"}}`, nil, "error"},
		{"bytes after the object", `{"action":"run","tool":"echo","arguments":{"text":"a"}} {}`, nil, "error"},
		{"not an object", `"run"`, nil, "error"},
		{"nothing", ``, nil, "error"},
		{"a question", `{"action":"run","tool":"ask","arguments":{"subject":"<b>\"x\"</b>"}}`,
			map[string]any{"type": "needs_input", "question": map[string]any{"id": "confirm",
				"text": "Go ahead with <b>\"x\"</b>?", "answer_type": "boolean"}}, ""},
		{"an answer that is not a boolean", `{"action":"run","tool":"ask","arguments":{"subject":"x"},"answers":{"confirm":"yes"}}`,
			nil, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := m.run(t, []byte(tc.req+"\n"))
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("the answer %.300q is not JSON: %v", out, err)
			}
			if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("answer = %v, want %v", got, tc.want)
			}
			if tc.wantType != "" && got["type"] != tc.wantType {
				t.Errorf("answer = %v, want one of type %s", got, tc.wantType)
			}
			if got["type"] == "error" && got["message"] == "" {
				t.Errorf("an error answer without a message: %s", out)
			}
		})
	}
}

// TestCHelperReadsOneLine checks that the helper reads the request's line
// and no further: what follows on standard input is the host's, for the
// tool's own host requests, and must be left there.
func TestCHelperReadsOneLine(t *testing.T) {
	m := newBareModule(t, buildC(t).wordCount)
	out := m.run(t, []byte(`{"action":"run","tool":"word_count","arguments":{"text":"one two"}}`+"\n"+`{"jsonrpc":"2.0"}`+"\n"))
	var a struct {
		Type       string         `json:"type"`
		Structured map[string]int `json:"structured"`
	}
	if err := json.Unmarshal(out, &a); err != nil || a.Type != "success" || a.Structured["words"] != 2 {
		t.Fatalf("answer %q (%v), want success with 2 words", out, err)
	}
}

// TestHostCallC runs the example head of examples/wasm-c, which reads files
// through the host API with lathe.h's lathe_read_file, through an engine:
// a file its read permission names is read whole, in parts (the host reads
// at most 8 KiB at a time here, and each part's response is too long for the
// helper's first buffer, so it comes through lathe.host_result); one it
// does not name, though lathe could read it, is refused with the host's
// CodeDenied, and nothing of it reaches the answer. Both reads are
// operations of their calls, in the invocation and as engine events.
func TestHostCallC(t *testing.T) {
	m := buildC(t)
	ws := t.TempDir()
	var long strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&long, "line %d of a file longer than three parts\n", i)
	}
	// A name with a quote and a backslash must reach the host as itself:
	// the helper escapes what it puts in a request.
	quoted := `src/q",\"path\":\"secret.txt.txt`
	for name, content := range map[string]string{"src/long.txt": long.String(), "secret.txt": "TOPSECRET\n", quoted: "quoted\n"} {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tl := cToolLimits(t, m.head, "head", wasm.Options{Workspace: ws, Perms: host.Permissions{Read: []string{"src/"}}},
		host.Limits{Read: 8 << 10})
	var mu sync.Mutex
	invs := map[string]*lathe.Invocation{}
	var events []lathe.Event
	e := lathe.New(lathe.Options{Outer: []lathe.Middleware{func(next lathe.Handler) lathe.Handler {
		return func(ctx context.Context, inv *lathe.Invocation) (*tool.Outcome, error) {
			mu.Lock()
			invs[inv.Call.ID] = inv
			mu.Unlock()
			return next(ctx, inv)
		}
	}}})
	t.Cleanup(func() { e.Close() })
	if err := e.Register(tl); err != nil {
		t.Fatal(err)
	}
	stop := e.Subscribe(func(ev lathe.Event) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}, lathe.EventOperation)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	out := e.Call(ctx, &tool.Call{ID: "granted", Name: "head", Arguments: json.RawMessage(`{"path":"src/long.txt","lines":2000}`)})
	if out.Result == nil || out.Result.IsError || out.Result.Text() != long.String() {
		t.Fatalf("src/long.txt: got %.300s, want the whole file of %d bytes", text(out), long.Len())
	}
	out = e.Call(ctx, &tool.Call{ID: "granted-head", Name: "head", Arguments: json.RawMessage(`{"path":"src/long.txt","lines":2}`)})
	if want := "line 0 of a file longer than three parts\nline 1 of a file longer than three parts\n"; out.Result == nil ||
		out.Result.IsError || out.Result.Text() != want {
		t.Errorf("two lines of src/long.txt: got %s, want %q", text(out), want)
	}
	args, _ := json.Marshal(map[string]string{"path": quoted})
	out = e.Call(ctx, &tool.Call{ID: "quoted", Name: "head", Arguments: args})
	if out.Result == nil || out.Result.IsError || out.Result.Text() != "quoted\n" {
		t.Errorf("%s: got %s, want the file of that name", quoted, text(out))
	}
	out = e.Call(ctx, &tool.Call{ID: "denied", Name: "head", Arguments: json.RawMessage(`{"path":"secret.txt"}`)})
	if out.Result == nil || !out.Result.IsError || !strings.Contains(out.Result.Text(), "lathe denied reading secret.txt (-32001)") ||
		strings.Contains(out.Result.Text(), "TOPSECRET") {
		t.Errorf("secret.txt: got %s, want the tool to report the host's CodeDenied (-32001) and nothing of the file", text(out))
	}
	// The same read works once the permissions name the file: the
	// refusal is theirs, not the tool's own failure.
	wide := cToolLimits(t, m.head, "head", wasm.Options{Workspace: ws, Perms: host.Permissions{Read: []string{"."}}}, host.Limits{})
	if out := call(t, wide, map[string]any{"path": "secret.txt"}); out.Result == nil || out.Result.IsError ||
		out.Result.Text() != "TOPSECRET\n" {
		t.Errorf("secret.txt with a permission for it: %s, want its text", text(out))
	}

	mu.Lock()
	defer mu.Unlock()
	for id, want := range map[string]struct {
		subject, approval string
		n                 int
	}{"granted": {"src/long.txt", "allow", 0}, "denied": {"secret.txt", "deny", 1}} {
		inv := invs[id]
		if inv == nil {
			t.Fatalf("no invocation of the call %s", id)
		}
		ops := inv.Operations()
		// The file in parts of 8 KiB, the last one short, which ends it;
		// no other operation is the tool's.
		if id == "granted" {
			want.n = (long.Len() + 8<<10 - 1) / (8 << 10)
		}
		if len(ops) != want.n {
			t.Errorf("call %s: %d operations %+v, want %d reads", id, len(ops), ops, want.n)
		}
		for _, op := range ops {
			if op.Kind != "read" || op.Subject != want.subject || op.Approval != want.approval {
				t.Errorf("call %s: operation %+v, want a read of %s, %s", id, op, want.subject, want.approval)
			}
		}
	}
	// Events reach subscribers on their own goroutine: wait for them.
	seen := map[string]string{}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		for _, ev := range events {
			if ev.Operation != nil && ev.Operation.Kind == "read" {
				seen[ev.CallID] = ev.Operation.Subject + " " + ev.Operation.Approval
			}
		}
		// Other calls of the test read too: wait for these two calls'
		// events, whatever came before them.
		if seen["granted"] != "" && seen["denied"] != "" {
			break
		}
		mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		mu.Lock()
	}
	if seen["granted"] != "src/long.txt allow" || seen["denied"] != "secret.txt deny" {
		t.Errorf("operation events by call: %v, want granted: src/long.txt allow, denied: secret.txt deny", seen)
	}
}

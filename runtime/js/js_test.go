package js_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/runtime/js"
	"github.com/lathe-tools/lathe/runtimetest"
	"github.com/lathe-tools/lathe/tool"
)

// base is the directory every temporary directory of the run lies in, so
// that a host on it reaches the marker files of the conformance suite.
var base string

func TestMain(m *testing.M) {
	root, err := os.MkdirTemp("", "lathe-js-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if root, err = filepath.EvalSymlinks(root); err == nil {
		base = filepath.Join(root, "tmp")
		err = os.Mkdir(base, 0o700)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", base)
	code := m.Run()
	os.RemoveAll(root)
	os.Exit(code)
}

// module wraps a default export as esbuild's IIFE bundle with the global
// name __lathe_tool would.
func module(def string) []byte {
	return []byte("var __lathe_tool = (() => { return { default: " + def + " }; })();\n")
}

// suite holds the conformance suite's tools, written in JavaScript.
var suite = map[string]string{
	runtimetest.Echo: `{ description: "echo", execute(args) {
		return { content: [{ type: "text", text: args.text }], structured: { text: args.text } };
	} }`,
	runtimetest.Fail: `{ description: "fail", execute(args) { throw new Error("failed: " + args.message) } }`,
	// A script has no process and nothing to wait on but the clock: it
	// writes "started" and spins until the engine stops it.
	runtimetest.Sleep: `{ description: "sleep", async execute(args, ctx) {
		ctx.fs.writeFile(args.marker, "started\n", { append: true });
		for (;;) {}
	} }`,
	// The embedded engine's crash is going past the memory limit: no catch
	// block in the tool can make the call succeed after it.
	runtimetest.Crash: `{ description: "crash", execute(args) {
		console.error(args.message);
		const hoard = [];
		for (;;) hoard.push(new Array(100000).fill(hoard.length));
	} }`,
	runtimetest.Huge: `{ description: "huge", execute(args) { return "x".repeat(args.size) } }`,
	runtimetest.Ask: `{ description: "ask", async execute(args, ctx) {
		const yes = await ctx.ask({ id: "confirm", text: "Go on with " + args.subject + "?", type: "boolean" });
		if (!yes) throw new Error("declined " + args.subject);
		return "confirmed " + args.subject;
	} }`,
}

func specSchema(name string) json.RawMessage {
	for _, s := range runtimetest.Specs() {
		if s.Name == name {
			return s.InputSchema
		}
	}
	return nil
}

// newTool makes a tool of JavaScript source with a host on dir granting
// perms (no host when dir is "").
func newTool(t *testing.T, name, src, dir string, perms host.Permissions) tool.Tool {
	t.Helper()
	opts := js.Options{File: name + ".js", MemoryLimit: 32 << 20}
	if dir != "" {
		h, err := host.New(host.Config{Tool: name, Workspace: dir, Perms: perms})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		opts.Host = h
	}
	code := module(src)
	def, err := js.Describe(context.Background(), code, opts)
	if err != nil {
		t.Fatalf("Describe %s: %v", name, err)
	}
	rt, err := js.New(code, opts)
	if err != nil {
		t.Fatalf("New %s: %v", name, err)
	}
	schema := def.InputSchema
	if schema == nil {
		schema = specSchema(name)
	}
	return tool.Tool{Definition: tool.Definition{Name: name, Description: def.Description, InputSchema: schema, Runtime: js.RuntimeName}, Runtime: rt}
}

func TestConformance(t *testing.T) {
	runtimetest.Run(t, func(t *testing.T, name string) tool.Tool {
		return newTool(t, name, suite[name], base, host.Permissions{Write: []string{"."}})
	})
}

// call runs one call of tl through an engine, with a deadline.
func call(t *testing.T, tl tool.Tool, args any, timeout time.Duration) *tool.Outcome {
	t.Helper()
	e := lathe.New(lathe.Options{})
	t.Cleanup(func() { e.Close() })
	if err := e.Register(tl); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	hung := time.AfterFunc(timeout+30*time.Second, func() { panic("the call of " + tl.Definition.Name + " hung past its deadline") })
	defer hung.Stop()
	return e.Call(ctx, &tool.Call{Name: tl.Definition.Name, Arguments: raw})
}

func textOf(out *tool.Outcome) string {
	if out.Result == nil {
		return fmt.Sprintf("question %+v", out.Question)
	}
	return out.Result.Text()
}

func wantKind(t *testing.T, out *tool.Outcome, kind tool.ErrorKind, contains string) {
	t.Helper()
	if out.Result == nil || !out.Result.IsError || out.Result.ErrorKind != kind {
		t.Fatalf("got %q (%+v), want a %s error", textOf(out), out.Result, kind)
	}
	if !strings.Contains(out.Result.Text(), contains) {
		t.Errorf("error %q does not say %q", out.Result.Text(), contains)
	}
}

func wantText(t *testing.T, out *tool.Outcome, want string) {
	t.Helper()
	if out.Result == nil || out.Result.IsError || out.Result.Text() != want {
		t.Fatalf("got %q (%+v), want the text %q", textOf(out), out.Result, want)
	}
}

// ctx's callId, root and options reach the tool on every call: the root and
// options are encoded once, when the runtime is made, and the id per call.
func TestCtxInfo(t *testing.T) {
	dir := t.TempDir()
	h, err := host.New(host.Config{Tool: "info", Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	code := module(`{ description: "info", execute(args, ctx) {
		return { callId: ctx.callId, root: ctx.root, options: ctx.options };
	} }`)
	opts := js.Options{File: "info.js", Host: h, ToolOptions: map[string]any{"greeting": "hi \"there\"", "n": 2}}
	rt, err := js.New(code, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	for _, id := range []string{"call-1", `odd "id"`} {
		out, err := rt.Execute(context.Background(), &tool.Definition{Name: "info"}, &tool.Call{ID: id, Name: "info", Arguments: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			CallID  string         `json:"callId"`
			Root    string         `json:"root"`
			Options map[string]any `json:"options"`
		}
		if err := json.Unmarshal(out.Result.Structured, &got); err != nil {
			t.Fatalf("%s: %v", out.Result.Structured, err)
		}
		if got.CallID != id || got.Root != dir || got.Options["greeting"] != "hi \"there\"" || got.Options["n"] != float64(2) {
			t.Errorf("ctx held %+v, want callId %q, root %q and the options", got, id, dir)
		}
	}

	opts.ToolOptions = map[string]any{"bad": func() {}}
	if _, err := js.New(code, opts); err == nil || !strings.Contains(err.Error(), "info.js: the tool's options do not encode as JSON") {
		t.Errorf("New with an option JSON cannot hold: %v, want an error naming the file and the options", err)
	}
}

package js_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/runtime/js"
	"github.com/lathe-tools/lathe/tool"
)

// Engines prepared ahead of a call (started, the prelude run) must be as
// clean as engines made for the call: a call that tampers with everything it
// can reach, leaves work queued and keeps its ctx in a global, and the next
// call, run in a prepared engine, sees none of it.
func TestPreparedEngineCarriesNothing(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("pristine"), 0o600)
	tl := newTool(t, "leaky", `{ async execute(args, ctx) {
		if (args.tamper) {
			Object.prototype.polluted = "yes";
			Array.prototype.join = () => "tampered join";
			JSON.parse = () => ({ r: "tampered" });
			Promise.prototype.then = function () { throw new Error("tampered then"); };
			globalThis.leak = { args, ctx };
			globalThis.console = { log() { throw new Error("tampered console"); } };
			globalThis.__lathe_start = () => { throw new Error("tampered start"); };
			let n = 0;
			const again = () => { globalThis.late = ++n; Promise.resolve().then(again); };
			new Promise(() => {});
			return "tampered";
		}
		const seen = [];
		if (({}).polluted !== undefined) seen.push("Object.prototype");
		if (typeof globalThis.leak !== "undefined") seen.push("global");
		if (typeof globalThis.late !== "undefined") seen.push("queued work");
		if ([1, 2].join("-") !== "1-2") seen.push("Array.prototype");
		console.log("console works");
		if (ctx.fs.readFile("a.txt") !== "pristine") seen.push("ctx.fs");
		if (ctx.callId !== args.id) seen.push("callId " + ctx.callId);
		return seen.length ? "saw " + seen.join(",") : "pristine";
	} }`, dir, host.Permissions{Read: []string{"."}})
	e := newEngine(t, tl)
	for i := range 4 {
		js.WaitPrepared(t)
		before := js.PreparedTaken()
		out := e.Call(ctxT(t), &tool.Call{ID: "tamper", Name: "leaky", Arguments: []byte(`{"tamper": true}`)})
		wantText(t, out, "tampered")
		js.WaitPrepared(t)
		id := "check-" + string(rune('0'+i))
		out = e.Call(ctxT(t), &tool.Call{ID: id, Name: "leaky", Arguments: []byte(`{"tamper": false, "id": "` + id + `"}`)})
		wantText(t, out, "pristine")
		if got := js.PreparedTaken() - before; got != 2 {
			t.Fatalf("%d of the two calls ran in a prepared engine, want both", got)
		}
	}
}

// A prepared engine serves the call it is given, with that call's tool's
// host and memory limit, whichever tool's call came before.
func TestPreparedEngineIsTheCallsOwn(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("A"), 0o600)
	const src = `{ execute(args, ctx) {
		let r;
		try { r = ctx.fs.readFile("a.txt"); } catch (e) { r = "refused"; }
		const keep = [];
		try { for (let i = 0; i < 20; i++) keep.push(new Array(100000).fill(i)); } catch (e) { return r + ", " + e.message; }
		return r + ", allocated";
	} }`
	mk := func(name string, limit int64, perms host.Permissions) tool.Tool {
		h, err := host.New(host.Config{Tool: name, Workspace: dir, Perms: perms})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		rt, err := js.New(module(src), js.Options{File: name + ".js", Host: h, MemoryLimit: limit})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close() })
		return tool.Tool{Definition: tool.Definition{Name: name, Description: name, InputSchema: []byte(`{"type":"object"}`), Runtime: js.RuntimeName}, Runtime: rt}
	}
	wide := mk("wide", 128<<20, host.Permissions{Read: []string{"a.txt"}})
	narrow := mk("narrow", 8<<20, host.Permissions{})
	e := newEngine(t, wide, narrow)
	before := js.PreparedTaken()
	for range 3 {
		js.WaitPrepared(t)
		wantText(t, e.Call(ctxT(t), &tool.Call{Name: "wide", Arguments: []byte(`{}`)}), "A, allocated")
		js.WaitPrepared(t)
		out := e.Call(ctxT(t), &tool.Call{Name: "narrow", Arguments: []byte(`{}`)})
		if out.Result == nil || out.Result.Text() != "refused, out of memory" {
			t.Fatalf("the narrow tool got %q, want its own refusal and its own memory limit", textOf(out))
		}
	}
	if got := js.PreparedTaken() - before; got != 6 {
		t.Fatalf("%d of the six calls ran in a prepared engine, want all", got)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newEngine returns an engine with tools registered.
func newEngine(t *testing.T, tools ...tool.Tool) *lathe.Engine {
	t.Helper()
	e := lathe.New(lathe.Options{})
	t.Cleanup(func() { e.Close() })
	for _, tl := range tools {
		if err := e.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/internal/wasmbuild"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/runtime/wasm"
	"github.com/lathe-tools/lathe/tool"
)

// wcText is the word_count tool's argument in the WASM benchmarks.
const wcText = "the quick brown fox jumps over the lazy dog"

// cWordCount builds the word_count tool written in C (the runtime's test
// tool, runtime/wasm/testdata/c/wc.c) into a module in a temporary
// directory and returns its path.
func cWordCount(b *testing.B) string {
	b.Helper()
	return wasmbuild.C(b, filepath.Join(b.TempDir(), "wc.wasm"), "-I../sdk/c", "../runtime/wasm/testdata/c/wc.c", "../sdk/c/lathe.c")
}

// bareWASM is the raw floor of a WASM tool call: wazero alone, with the
// module compiled once, and per call an instance with the request on
// standard input, run to its end, its standard output read. It is what any
// embedder of wazero must do to run a WASI command once; the pipeline adds
// lathe's stages and the runtime's confinement to it.
//
// A stoppable floor is compiled with wazero's WithCloseOnContextDone and
// runs each instance under a context of its own, as any embedder must who
// stops a module at a deadline: without it wazero cannot stop a module
// that loops. It makes every turn of every loop in the module call back
// into Go to check that the module may go on, so it costs in proportion to
// the loops the module runs.
type bareWASM struct {
	r         wazero.Runtime
	cm        wazero.CompiledModule
	stoppable bool
}

// newBareWASM compiles the module on a runtime of its own, with the
// compilation cache given (nil for none).
func newBareWASM(b *testing.B, wasm []byte, cache wazero.CompilationCache, stoppable bool) *bareWASM {
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfig().WithCloseOnContextDone(stoppable)
	if cache != nil {
		cfg = cfg.WithCompilationCache(cache)
	}
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		b.Fatal(err)
	}
	cm, err := r.CompileModule(ctx, wasm)
	if err != nil {
		b.Fatal(err)
	}
	return &bareWASM{r: r, cm: cm, stoppable: stoppable}
}

func (w *bareWASM) close() { w.r.Close(context.Background()) }

// run runs one instance with req on standard input and returns what it
// wrote to standard output.
func (w *bareWASM) run(b *testing.B, req []byte) []byte {
	ctx := context.Background()
	if w.stoppable {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
	}
	var out bytes.Buffer
	mod, err := w.r.InstantiateModule(ctx, w.cm, wazero.NewModuleConfig().WithName("").
		WithStdin(bytes.NewReader(req)).WithStdout(&out).WithStderr(io.Discard).WithArgs("tool"))
	if err != nil {
		b.Fatalf("bare wazero: %v", err)
	}
	mod.Close(ctx)
	return out.Bytes()
}

// checkWordCount fails b unless out is word_count's answer for wcText.
func checkWordCount(b *testing.B, out []byte) {
	var a struct {
		Type       string `json:"type"`
		Structured struct {
			Words int `json:"words"`
		} `json:"structured"`
	}
	if err := json.Unmarshal(out, &a); err != nil || a.Type != "success" || a.Structured.Words != 9 {
		b.Fatalf("word_count answered %q (%v)", out, err)
	}
}

// wasmGuest is one module the benchmarks run, and the call they make.
type wasmGuest struct {
	name string // guest=c or guest=go
	path string // the module file
	tool string
	args json.RawMessage
	text string // the text of its result
	// check fails b unless out is the tool's answer to args.
	check func(b *testing.B, out []byte)
}

// wasmGuests builds the two guests: word_count in C, and the echo tool of
// the runtime's Go test guest (GOOS=wasip1 GOARCH=wasm, written with
// package sdk).
func wasmGuests(b *testing.B) []wasmGuest {
	goPath := wasmbuild.Go(b, filepath.Join(b.TempDir(), "guest.wasm"), "../runtime/wasm/testdata/go")
	return []wasmGuest{
		{"guest=c", cWordCount(b), "word_count", json.RawMessage(`{"text":"` + wcText + `"}`), "9 words", checkWordCount},
		{"guest=go", goPath, "echo", json.RawMessage(`{"text":"` + wcText + `"}`), wcText, func(b *testing.B, out []byte) {
			var a struct{ Type, Content string }
			if err := json.Unmarshal(out, &a); err != nil || a.Type != "success" || a.Content != wcText {
				b.Fatalf("echo answered %q (%v)", out, err)
			}
		}},
	}
}

// pipeline is a guest's tool loaded by lathe's WASM runtime, with a host
// of its own (as every WASM tool lathe loads has) and its workspace, on an
// engine.
type pipeline struct {
	e  *lathe.Engine
	rt *wasm.Runtime
	h  *host.Host
}

// newPipeline makes a WASM runtime (with its compilation cache in
// cacheDir, "" for none), loads g's module, and registers its tool with
// the definition def on a new engine: what lathe does to load a WASM tool
// whose schema it knows, up to its first call.
func newPipeline(b *testing.B, g wasmGuest, def tool.Definition, ws, cacheDir string) *pipeline {
	rt, err := wasm.NewRuntime(wasm.Config{CacheDir: cacheDir})
	if err != nil {
		b.Fatal(err)
	}
	h, err := host.New(host.Config{Tool: g.tool, Workspace: ws})
	if err != nil {
		b.Fatal(err)
	}
	m, err := rt.Load(context.Background(), g.path, wasm.Options{Host: h, Workspace: ws})
	if err != nil {
		b.Fatal(err)
	}
	e := lathe.New(lathe.Options{})
	if err := e.Register(m.Tool(def, g.tool)); err != nil {
		b.Fatal(err)
	}
	return &pipeline{e: e, rt: rt, h: h}
}

func (p *pipeline) close() {
	p.e.Close()
	p.rt.Close()
	p.h.Close()
}

// call calls the tool through the engine and checks its text.
func (p *pipeline) call(b *testing.B, g wasmGuest) {
	out := p.e.Call(context.Background(), &tool.Call{Name: g.tool, Arguments: g.args})
	if out.Result == nil || out.Result.IsError || out.Result.Text() != g.text {
		b.Fatalf("engine call of %s: %+v, want the text %q", g.tool, out.Result, g.text)
	}
}

// describe returns the definition of g's tool, as the module describes it.
func describe(b *testing.B, g wasmGuest, ws string) tool.Definition {
	rt, err := wasm.NewRuntime(wasm.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	tools, _, err := rt.Tools(context.Background(), g.path, wasm.Options{Workspace: ws})
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range tools {
		if t.Definition.Name == g.tool {
			return t.Definition
		}
	}
	b.Fatalf("%s does not describe %s", g.path, g.tool)
	return tool.Definition{}
}

// BenchmarkWASM measures a WASM tool call through lathe against bare
// wazero running the same module in the same run, for a tool in C
// (word_count) and one in Go (echo):
//
//   - warm: the module compiled already; the engine's whole pipeline
//     (validation, policy, deadline, the runtime's host session, confined
//     preopen, memory limit, output cap, answer parsing) against bare
//     wazero instantiating and running the module with the request on
//     standard input, in ten alternating rounds. floor=bare is wazero as
//     it comes; floor=stoppable is wazero that can stop the module at a
//     deadline, as lathe must (see bareWASM). Each reports engine-ns/op,
//     floor-ns/op, engine/floor, and the same in processor time
//     (engine-cpu-ns/op, floor-cpu-ns/op, cpu-engine/floor), which a busy
//     machine disturbs less.
//   - cold: a first call on a fresh runtime, which compiles the module
//     (cache=none) or reads its compiled code from wazero's cache on disk
//     (cache=disk), against the stoppable floor doing the same (a new
//     runtime, compile, one run, with a cache of its own) — the floor
//     that compiles the same code. It reports the medians ms/run,
//     floor-ms/run and x-floor.
func BenchmarkWASM(b *testing.B) {
	ws := b.TempDir()
	for _, g := range wasmGuests(b) {
		wasmBytes := readFile(b, g.path)
		req, err := protocol.NewRequest(&protocol.Request{Action: protocol.ActionRun, Tool: g.tool, Arguments: g.args,
			Context: protocol.Context{Root: ws}})
		if err != nil {
			b.Fatal(err)
		}
		def := describe(b, g, ws)
		for _, stoppable := range []bool{false, true} {
			b.Run("warm/"+g.name+map[bool]string{false: "/floor=bare", true: "/floor=stoppable"}[stoppable], func(b *testing.B) {
				w := newBareWASM(b, wasmBytes, nil, stoppable)
				defer w.close()
				g.check(b, w.run(b, req))
				p := newPipeline(b, g, def, ws, "")
				defer p.close()
				cpuCompare(b, func() { w.run(b, req) }, func() { p.call(b, g) })
			})
		}
		for _, disk := range []bool{false, true} {
			b.Run("cold/"+g.name+map[bool]string{false: "/cache=none", true: "/cache=disk"}[disk], func(b *testing.B) {
				// Each run of the floor opens the cache directory anew, as
				// a new lathe process does: a CompilationCache object
				// kept between runs would serve the compiled module from
				// memory and never read the disk.
				var floorDir, pipeDir string
				floorCache := func() wazero.CompilationCache {
					if floorDir == "" {
						return nil
					}
					c, err := wazero.NewCompilationCacheWithDir(floorDir)
					if err != nil {
						b.Fatal(err)
					}
					return c
				}
				if disk {
					floorDir = b.TempDir()
					c := floorCache()
					newBareWASM(b, wasmBytes, c, true).close() // fill both caches
					c.Close(context.Background())
					pipeDir = filepath.Join(b.TempDir(), "cache")
					newPipeline(b, g, def, ws, pipeDir).close()
				}
				compareRuns(b, func() {
					c := floorCache()
					w := newBareWASM(b, wasmBytes, c, true)
					g.check(b, w.run(b, req))
					w.close()
					if c != nil {
						c.Close(context.Background())
					}
				}, func() {
					p := newPipeline(b, g, def, ws, pipeDir)
					p.call(b, g)
					p.close()
				})
			})
		}
	}
}

func readFile(b *testing.B, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

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

	"github.com/lathe-tools/lathe/internal/wasmbuild"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
)

// wcText is the word_count tool's argument in the WASM benchmarks.
const wcText = "the quick brown fox jumps over the lazy dog"

// cWordCount builds the word_count tool written in C (the runtime's test
// tool, runtime/wasm/testdata/c/wc.c) into a module in a temporary
// directory and returns its path.
func cWordCount(b *testing.B) string {
	b.Helper()
	src := "../runtime/wasm/testdata/c/"
	return wasmbuild.C(b, filepath.Join(b.TempDir(), "wc.wasm"), src+"wc.c", src+"lathe.c")
}

// bareWASM is the raw floor of a WASM tool call: wazero alone, with the
// module compiled once, and per call an instance with the request on
// standard input, run to its end, its standard output read. It is what any
// embedder of wazero must do to run a WASI command once; the pipeline adds
// lathe's stages and the runtime's confinement to it.
type bareWASM struct {
	r  wazero.Runtime
	cm wazero.CompiledModule
}

// newBareWASM compiles the module on a runtime of its own, with the
// compilation cache given (nil for none).
func newBareWASM(b *testing.B, wasm []byte, cache wazero.CompilationCache) *bareWASM {
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfig()
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
	return &bareWASM{r: r, cm: cm}
}

func (w *bareWASM) close() { w.r.Close(context.Background()) }

// run runs one instance with req on standard input and returns what it
// wrote to standard output.
func (w *bareWASM) run(b *testing.B, req []byte) []byte {
	ctx := context.Background()
	var out bytes.Buffer
	mod, err := w.r.InstantiateModule(ctx, w.cm, wazero.NewModuleConfig().WithName("").
		WithStdin(bytes.NewReader(req)).WithStdout(&out).WithStderr(io.Discard).WithArgs("tool"))
	if err != nil {
		b.Fatalf("bare wazero: %v", err)
	}
	mod.Close(ctx)
	return out.Bytes()
}

// wordCountRequest is the request the runtime sends for word_count, which
// the floor sends too.
func wordCountRequest(b *testing.B, root string) []byte {
	req, err := protocol.NewRequest(&protocol.Request{Action: protocol.ActionRun, Tool: "word_count",
		Arguments: json.RawMessage(`{"text":"` + wcText + `"}`), Context: protocol.Context{Root: root}})
	if err != nil {
		b.Fatal(err)
	}
	return req
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

// BenchmarkWASMFloor measures the bare floors alone: a warm call (the
// module compiled once) and a cold one (a new runtime that compiles the
// module first), with wazero's compilation cache on disk and without.
func BenchmarkWASMFloor(b *testing.B) {
	wasm := readFile(b, cWordCount(b))
	req := wordCountRequest(b, b.TempDir())
	b.Run("warm", func(b *testing.B) {
		w := newBareWASM(b, wasm, nil)
		defer w.close()
		checkWordCount(b, w.run(b, req))
		b.ResetTimer()
		for range b.N {
			w.run(b, req)
		}
	})
	for _, disk := range []bool{false, true} {
		b.Run(map[bool]string{false: "cold/cache=none", true: "cold/cache=disk"}[disk], func(b *testing.B) {
			var cache wazero.CompilationCache
			if disk {
				c, err := wazero.NewCompilationCacheWithDir(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close(context.Background())
				cache = c
				newBareWASM(b, wasm, cache).close() // fill the cache
			}
			b.ResetTimer()
			for range b.N {
				w := newBareWASM(b, wasm, cache)
				checkWordCount(b, w.run(b, req))
				w.close()
			}
		})
	}
}

func readFile(b *testing.B, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

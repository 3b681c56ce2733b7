package wasm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/runtime/wasm"
	"github.com/lathe-tools/lathe/runtimetest"
	"github.com/lathe-tools/lathe/tool"
)

// guest is the Go tool of testdata/go built for wasip1, once per run;
// base is the directory every temporary directory of the run lies in.
var (
	guest    string
	guestErr error
	base     string
	shared   *wasm.Runtime
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := os.MkdirTemp("", "lathe-wasm-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(root)
	if root, err = filepath.EvalSymlinks(root); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Every t.TempDir of the run lies in base, so that a permission on
	// base reaches the marker files the conformance suite makes; the
	// guest lies beside it, out of every test's write scope.
	base = filepath.Join(root, "tmp")
	if err := os.Mkdir(base, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Setenv("TMPDIR", base)
	guest = filepath.Join(root, "guest.wasm")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", guest, "./testdata/go")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		guestErr = fmt.Errorf("building the Go guest: %v\n%s", err, out)
	}
	cacheDir := filepath.Join(root, "cache")
	if shared, err = wasm.NewRuntime(wasm.Config{CacheDir: cacheDir}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer shared.Close()
	if guestErr == nil {
		// Compile the guest once, here, with time to spare (a -race build
		// on a busy machine takes minutes), rather than in whichever test
		// comes first.
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Minute)
		_, guestErr = shared.Load(cctx, guest, wasm.Options{})
		ccancel()
	}
	return m.Run()
}

func guestPath(t *testing.T) string {
	t.Helper()
	if guestErr != nil {
		t.Fatal(guestErr)
	}
	return guest
}

// allowAll is a file check that lets everything through: what is refused
// with it is refused by the preopens themselves.
func allowAll(context.Context, string, string) error { return nil }

// guestTool returns the guest's tool name, with the file check c (nil: the
// host's own).
func guestTool(t *testing.T, name string, opts wasm.Options, c func(context.Context, string, string) error) tool.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if opts.Host == nil {
		h, err := host.New(host.Config{Tool: name, Workspace: opts.Workspace, Perms: opts.Perms})
		if err != nil {
			t.Fatal(err)
		}
		opts.Host = h
		t.Cleanup(func() { h.Close() })
	}
	tools, leftOut, err := shared.Tools(ctx, guestPath(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(leftOut) > 0 {
		t.Fatalf("tools left out: %v", leftOut)
	}
	for _, tl := range tools {
		if tl.Definition.Name == name {
			if c != nil {
				tl = wasm.WithChecker(tl, c)
			}
			return tl
		}
	}
	t.Fatalf("the guest has no tool %s", name)
	return tool.Tool{}
}

// The conformance suite runs with the host's own checks: the workspace is
// the directory every temporary directory of the run lies in, so that the
// marker files the suite makes are inside it, and writable.
func TestConformance(t *testing.T) {
	runtimetest.Run(t, func(t *testing.T, name string) tool.Tool {
		return guestTool(t, name, wasm.Options{Workspace: base, Perms: host.Permissions{Write: []string{"."}}}, nil)
	})
}

// call runs one call of tl through an engine, with a deadline.
func call(t *testing.T, tl tool.Tool, args any, opts ...lathe.Options) *tool.Outcome {
	t.Helper()
	o := lathe.Options{}
	if len(opts) > 0 {
		o = opts[0]
	}
	e := lathe.New(o)
	t.Cleanup(func() { e.Close() })
	if err := e.Register(tl); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := e.Call(ctx, &tool.Call{Name: tl.Definition.Name, Arguments: raw})
	if ctx.Err() != nil {
		t.Fatalf("the call of %s did not return within a minute", tl.Definition.Name)
	}
	return out
}

func text(out *tool.Outcome) string {
	if out.Result == nil {
		return fmt.Sprintf("a question %+v", out.Question)
	}
	return out.Result.Text()
}

func TestEnvironment(t *testing.T) {
	ws := t.TempDir()
	out := call(t, guestTool(t, "env", wasm.Options{Workspace: ws}, allowAll), map[string]any{})
	if out.Result == nil || out.Result.IsError {
		t.Fatalf("env: %s", text(out))
	}
	var got struct {
		Root string
		WD   string
		Env  []string
		Now  int
	}
	if err := json.Unmarshal(out.Result.Structured, &got); err != nil {
		t.Fatal(err)
	}
	if got.Root != ws || got.WD != ws {
		t.Errorf("root %q, working directory %q, want both %q", got.Root, got.WD, ws)
	}
	for _, kv := range got.Env {
		if !strings.HasPrefix(kv, "PWD=") {
			t.Errorf("the module sees the variable %s; it should see only PWD", kv)
		}
	}
	if got.Now < 2025 {
		t.Errorf("the module's clock says the year %d, not the real one", got.Now)
	}
}

func TestNotWASM(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct {
		content []byte
		want    string
	}{
		"elf.wasm":    {[]byte("\x7fELF\x02\x01\x01"), "is not a WASM module: it is an ELF executable"},
		"script.wasm": {[]byte("#!/bin/sh\necho hi\n"), "is not a WASM module: it is a script"},
		"text.wasm":   {[]byte("(module)\n"), "it is WebAssembly text"},
		"empty.wasm":  {nil, "is not a WASM module"},
		"broken.wasm": {[]byte("\x00asm\x01\x00\x00\x00\x01\x05"), "does not compile"},
		"lib.wasm":    {module(nil, false, nil), "not a WASI command module: it exports no _start"},
		"env.wasm":    {module([]imp{{"env", "f"}}, true, nil), "not a WASI command module: it imports env.f"},
		"nowasi.wasm": {module(nil, true, []byte{0x0b}), "imports nothing from wasi_snapshot_preview1"},
		"gojs.wasm":   {module([]imp{{"gojs", "runtime.wasmExit"}}, true, nil), "built for GOOS=js"},
	}
	for name, c := range cases {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, c.content, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := shared.Load(context.Background(), p, wasm.Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, c.want)
		}
	}
}

func TestTrap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "trap.wasm")
	// _start: unreachable.
	if err := os.WriteFile(p, module([]imp{{"wasi_snapshot_preview1", "proc_exit"}}, true, []byte{0x00, 0x0b}), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := shared.Load(context.Background(), p, wasm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := call(t, m.Tool(tool.Definition{Name: "trap", InputSchema: json.RawMessage(`{"type":"object"}`)}, ""), map[string]any{})
	if out.Result == nil || out.Result.ErrorKind != tool.KindRuntimeFailure ||
		!strings.Contains(text(out), "the tool trapped: wasm error: unreachable") || !strings.Contains(text(out), "_start") {
		t.Errorf("got %s, want a runtime failure naming the trap and the function", text(out))
	}
}

func TestExitWithoutAnswer(t *testing.T) {
	ws := t.TempDir()
	out := call(t, guestTool(t, "crash", wasm.Options{Workspace: ws}, allowAll), map[string]any{"message": "going down"})
	if out.Result == nil || out.Result.ErrorKind != tool.KindRuntimeFailure ||
		!strings.Contains(text(out), "exit code 3") || !strings.Contains(text(out), "going down") {
		t.Errorf("got %s, want a runtime failure with the exit code and standard error", text(out))
	}
}

// imp is an imported function of a test module, of type (i32) -> ().
type imp struct{ mod, name string }

// module assembles a small WASM module: functions imported, a memory of
// one page, and, when start, an exported _start whose body is code (a
// return when nil).
func module(imports []imp, start bool, code []byte) []byte {
	vec := func(items ...[]byte) []byte {
		out := []byte{byte(len(items))}
		for _, it := range items {
			out = append(out, it...)
		}
		return out
	}
	name := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	section := func(id byte, body []byte) []byte { return append([]byte{id, byte(len(body))}, body...) }
	b := []byte("\x00asm\x01\x00\x00\x00")
	b = append(b, section(1, vec([]byte{0x60, 0x00, 0x00}, []byte{0x60, 0x01, 0x7f, 0x00}))...) // types: () -> (), (i32) -> ()
	if len(imports) > 0 {
		var items [][]byte
		for _, i := range imports {
			items = append(items, append(append(name(i.mod), name(i.name)...), 0x00, 0x01))
		}
		b = append(b, section(2, vec(items...))...)
	}
	if !start {
		return append(b, section(5, vec([]byte{0x00, 0x01}))...)
	}
	b = append(b, section(3, vec([]byte{0x00}))...)       // one function of type 0
	b = append(b, section(5, vec([]byte{0x00, 0x01}))...) // memory: min 1 page
	idx := byte(len(imports))                             // the function's index
	b = append(b, section(7, vec(append(name("_start"), 0x00, idx)))...)
	if code == nil {
		code = []byte{0x0b}
	}
	body := append([]byte{0x00}, code...) // no locals
	b = append(b, section(10, vec(append([]byte{byte(len(body))}, body...)))...)
	return b
}

// The compilation cache holds machine code that runs as lathe: a directory
// that others may write, or one inside the workspace, is refused.
func TestCacheDirRefused(t *testing.T) {
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if rt, err := wasm.NewRuntime(wasm.Config{CacheDir: open}); err == nil || !strings.Contains(err.Error(), "may be written by other users") {
		if rt != nil {
			rt.Close()
		}
		t.Errorf("a cache writable by all: %v, want a refusal", err)
	}
	ws := t.TempDir()
	if rt, err := wasm.NewRuntime(wasm.Config{CacheDir: filepath.Join(ws, "cache"), Workspace: ws}); err == nil || !strings.Contains(err.Error(), "lies in the workspace") {
		if rt != nil {
			rt.Close()
		}
		t.Errorf("a cache in the workspace: %v, want a refusal", err)
	}
	planted := t.TempDir()
	if err := os.Mkdir(filepath.Join(planted, "wazero-v1-planted"), 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(planted, "wazero-v1-planted"), 0o777)
	if rt, err := wasm.NewRuntime(wasm.Config{CacheDir: planted}); err == nil {
		rt.Close()
		t.Error("a cache with a subdirectory writable by all was used")
	}
}

// A module in its own write scope is refused: it could rewrite itself.
func TestSelfWritable(t *testing.T) {
	ws := t.TempDir()
	b, err := os.ReadFile(guestPath(t))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(ws, "tools", "guest.wasm")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{".", "tools/", "**/*.wasm", ws + "/tools"} {
		h, err := host.New(host.Config{Tool: "t", Workspace: ws, Perms: host.Permissions{Write: []string{w}}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = shared.Load(context.Background(), p, wasm.Options{Host: h, Workspace: ws, Perms: h.Permissions()})
		if err == nil || !strings.Contains(err.Error(), "write scope") {
			t.Errorf("write = [%q]: Load = %v, want a refusal", w, err)
		}
		h.Close()
	}
	h, err := host.New(host.Config{Tool: "t", Workspace: ws, Perms: host.Permissions{Write: []string{"out/"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := shared.Load(context.Background(), p, wasm.Options{Host: h, Workspace: ws, Perms: h.Permissions()}); err != nil {
		t.Errorf("write = [\"out/\"]: %v", err)
	}
}

// A runtime keeps the compiled module on disk, and a second runtime on the
// same directory (a later lathe) runs the module from it.
func TestCacheOnDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	for i := range 2 {
		rt, err := wasm.NewRuntime(wasm.Config{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		ws := t.TempDir()
		h, err := host.New(host.Config{Tool: "echo", Workspace: ws})
		if err != nil {
			t.Fatal(err)
		}
		tools, _, err := rt.Tools(context.Background(), guestPath(t), wasm.Options{Host: h, Workspace: ws})
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools {
			if tl.Definition.Name == "echo" {
				if out := call(t, tl, map[string]any{"text": "cached"}); text(out) != "cached" {
					t.Errorf("run %d: %s", i, text(out))
				}
			}
		}
		rt.Close()
		h.Close()
		var files int
		filepath.WalkDir(dir, func(_ string, d os.DirEntry, _ error) error {
			if d != nil && !d.IsDir() {
				files++
			}
			return nil
		})
		if files == 0 {
			t.Fatalf("run %d: nothing in the cache directory", i)
		}
	}
}

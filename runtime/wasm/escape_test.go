package wasm_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/runtime/wasm"
	"github.com/lathe-tools/lathe/tool"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// escapeDirs makes a workspace and a directory beside it holding a
// secret, with links in the workspace that lead to the secret.
func escapeDirs(t *testing.T) (ws, outside string) {
	t.Helper()
	root := t.TempDir()
	ws, outside = filepath.Join(root, "ws"), filepath.Join(root, "outside")
	for _, d := range []string{ws, outside, filepath.Join(ws, "sub")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(ws, "inside.txt"), "inside")
	write(t, filepath.Join(outside, "secret.txt"), "the secret")
	for link, target := range map[string]string{
		"abslink":     filepath.Join(outside, "secret.txt"),
		"rellink":     "../outside/secret.txt",
		"dirlink":     outside,
		"sub/uplink":  "../../outside/secret.txt",
		"sub/wslink":  "../inside.txt", // stays inside: allowed
		"sub/rootdir": "/",
	} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	return ws, outside
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Paths out of a preopen are refused by the preopen itself, whatever the
// permissions say: "..", absolute paths, and links inside the workspace
// that lead out, wherever they point.
func TestEscapePaths(t *testing.T) {
	ws, outside := escapeDirs(t)
	read := guestTool(t, "read", wasm.Options{Workspace: ws}, allowAll)
	if out := call(t, read, map[string]any{"path": "inside.txt"}); text(out) != "inside" {
		t.Fatalf("reading inside the workspace: %s", text(out))
	}
	if out := call(t, read, map[string]any{"path": "sub/wslink"}); text(out) != "inside" {
		t.Errorf("a link that stays inside the workspace: %s", text(out))
	}
	for _, p := range []string{
		"../outside/secret.txt",
		filepath.Join(outside, "secret.txt"),
		ws + "/../outside/secret.txt",
		"abslink", "rellink", "dirlink/secret.txt", "sub/uplink", "sub/rootdir/etc/passwd",
		"sub/../../outside/secret.txt",
	} {
		out := call(t, read, map[string]any{"path": p})
		if out.Result == nil || !out.Result.IsError || strings.Contains(text(out), "the secret") || strings.Contains(text(out), "root:") {
			t.Errorf("reading %s: got %s, want a refusal", p, text(out))
		}
	}
	list := guestTool(t, "list", wasm.Options{Workspace: ws}, allowAll)
	if out := call(t, list, map[string]any{"path": "dirlink"}); !out.Result.IsError || strings.Contains(text(out), "secret.txt") {
		t.Errorf("listing a link to a directory outside: %s", text(out))
	}
}

// The attack of TestEscapePaths works against wazero's own directory
// mount, which follows links wherever they lead: that is why lathe's
// preopens open every path through an os.Root.
func TestEscapeWorksWithoutConfinement(t *testing.T) {
	ws, _ := escapeDirs(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	b, err := os.ReadFile(guestPath(t))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(map[string]any{"protocol": 1, "action": "run", "tool": "read",
		"arguments": map[string]string{"path": "abslink"}, "context": map[string]string{"root": ws}})
	var out strings.Builder
	cfg := wazero.NewModuleConfig().WithStdin(strings.NewReader(string(req))).WithStdout(&out).
		WithEnv("PWD", ws).WithFSConfig(wazero.NewFSConfig().WithDirMount(ws, ws))
	if _, err := rt.InstantiateWithConfig(ctx, b, cfg); err != nil && !strings.Contains(err.Error(), "exit_code(0)") {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "the secret") {
		t.Fatalf("through a plain directory mount the link did not lead out (%s); the escape tests prove nothing", out.String())
	}
}

// A module may make no link: a link it made could give a file its
// permissions do not reach a name they do.
func TestEscapeGuestSymlink(t *testing.T) {
	ws, outside := escapeDirs(t)
	link := guestTool(t, "symlink", wasm.Options{Workspace: ws, Perms: host.Permissions{Write: []string{"."}}}, allowAll)
	out := call(t, link, map[string]any{"target": filepath.Join(outside, "secret.txt"), "link": "evil"})
	if out.Result == nil || !out.Result.IsError {
		t.Errorf("making a link: %s, want a refusal", text(out))
	}
	if _, err := os.Lstat(filepath.Join(ws, "evil")); err == nil {
		t.Error("the module made a link in the workspace")
	}
}

// A workspace the tool may not write is mounted read-only: a write there
// fails even when the check would let it through.
func TestEscapeReadOnlyMount(t *testing.T) {
	ws, _ := escapeDirs(t)
	perms := host.Permissions{Read: []string{"."}}
	wr := guestTool(t, "write", wasm.Options{Workspace: ws, Perms: perms}, allowAll)
	for _, p := range []string{"new.txt", "inside.txt", "sub/new.txt"} {
		out := call(t, wr, map[string]any{"path": p, "data": "overwritten"})
		if out.Result == nil || !out.Result.IsError || !strings.Contains(strings.ToLower(text(out)), "read-only") {
			t.Errorf("writing %s: %s, want a refusal", p, text(out))
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "inside.txt")); string(b) != "inside" {
		t.Errorf("the read-only file now holds %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "new.txt")); err == nil {
		t.Error("the module made a file in a read-only workspace")
	}
	rm := guestTool(t, "remove", wasm.Options{Workspace: ws, Perms: perms}, allowAll)
	if out := call(t, rm, map[string]any{"path": "inside.txt"}); out.Result == nil || !out.Result.IsError {
		t.Errorf("removing in a read-only workspace: %s", text(out))
	}
	if _, err := os.Stat(filepath.Join(ws, "inside.txt")); err != nil {
		t.Errorf("the module removed a file of a read-only workspace: %v", err)
	}
}

// A FIFO in the workspace neither blocks the call nor is read.
func TestEscapeFIFO(t *testing.T) {
	ws, _ := escapeDirs(t)
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	read := guestTool(t, "read", wasm.Options{Workspace: ws}, allowAll)
	read.Timeout = 20 * time.Second
	out := call(t, read, map[string]any{"path": "fifo"})
	if out.Result == nil || !out.Result.IsError || out.Result.ErrorKind == tool.KindTimeout {
		t.Errorf("reading a FIFO: %s (kind %s), want a prompt refusal", text(out), out.Result.ErrorKind)
	}
}

// A module reaches no network: it can dial nothing, and no descriptor it
// has is a socket it could accept on.
func TestEscapeNetwork(t *testing.T) {
	out := call(t, guestTool(t, "net", wasm.Options{Workspace: t.TempDir()}, allowAll), map[string]any{})
	if out.Result == nil || out.Result.IsError {
		t.Fatalf("net: %s", text(out))
	}
	var got map[string]string
	if err := json.Unmarshal(out.Result.Structured, &got); err != nil {
		t.Fatal(err)
	}
	if got["dial"] == "connected" || got["dial"] == "" {
		t.Errorf("dialling: %q, want an error", got["dial"])
	}
	if got["accepted"] != "0" {
		t.Errorf("the module accepted on a socket: %v", got)
	}
}

// A module that allocates without end is stopped at its memory limit with
// an error that says so, and the engine goes on.
func TestEscapeMemoryBomb(t *testing.T) {
	ws := t.TempDir()
	opts := wasm.Options{Workspace: ws, MemoryLimit: 64 << 20}
	e := lathe.New(lathe.Options{})
	defer e.Close()
	if err := e.Register(guestTool(t, "membomb", opts, allowAll), guestTool(t, "echo", opts, allowAll)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := e.Call(ctx, &tool.Call{Name: "membomb", Arguments: json.RawMessage(`{}`)})
	if out.Result == nil || out.Result.ErrorKind != tool.KindRuntimeFailure ||
		!strings.Contains(text(out), "out of memory") || !strings.Contains(text(out), "64 MiB") {
		t.Errorf("memory bomb: %s, want a runtime failure saying it ran out of its 64 MiB", text(out))
	}
	if out := e.Call(ctx, &tool.Call{Name: "echo", Arguments: json.RawMessage(`{"text":"alive"}`)}); text(out) != "alive" {
		t.Errorf("after the memory bomb: %s", text(out))
	}
}

// A module that loops without calling the host is stopped at its
// deadline, promptly.
func TestEscapeInfiniteLoop(t *testing.T) {
	spin := guestTool(t, "spin", wasm.Options{Workspace: t.TempDir()}, allowAll)
	spin.Timeout = 300 * time.Millisecond
	start := time.Now()
	out := call(t, spin, map[string]any{})
	if out.Result == nil || out.Result.ErrorKind != tool.KindTimeout {
		t.Errorf("infinite loop: %s, want a timeout", text(out))
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the loop was stopped after %s", d)
	}
}

// A module asleep in one long sleep (poll_oneoff, in lathe's code rather
// than the module's) is stopped at its deadline too.
func TestEscapeLongSleep(t *testing.T) {
	nap := guestTool(t, "nap", wasm.Options{Workspace: t.TempDir()}, allowAll)
	nap.Timeout = 300 * time.Millisecond
	start := time.Now()
	out := call(t, nap, map[string]any{})
	if out.Result == nil || out.Result.ErrorKind != tool.KindTimeout {
		t.Errorf("a long sleep: %s, want a timeout", text(out))
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the sleep was stopped after %s", d)
	}
}

// A module that sends host requests without reading their answers is
// stopped before their answers fill lathe's memory.
func TestEscapeHostFlood(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "big"), strings.Repeat("x", 1<<20))
	flood := guestTool(t, "flood", wasm.Options{Workspace: ws, Perms: host.Permissions{Read: []string{"big"}}}, nil)
	out := call(t, flood, map[string]any{"path": "big"})
	if out.Result == nil || out.Result.ErrorKind != tool.KindRuntimeFailure || !strings.Contains(text(out), "without reading their answers") {
		t.Errorf("a flood of host requests: %s, want a runtime failure saying so", text(out))
	}
}

// Standard output is capped: past it, the module is stopped.
func TestEscapeOutputCap(t *testing.T) {
	huge := guestTool(t, "huge", wasm.Options{Workspace: t.TempDir(), MaxOutputBytes: 1 << 20}, allowAll)
	out := call(t, huge, map[string]any{"size": 8 << 20})
	if out.Result == nil || out.Result.ErrorKind != tool.KindRuntimeFailure || !strings.Contains(text(out), "more than 1048576 bytes") {
		t.Errorf("huge output: %s, want the output limit", text(out))
	}
}

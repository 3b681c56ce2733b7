package wasm_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/runtime/wasm"
	"github.com/lathe-tools/lathe/tool"
)

// permsDirs makes a workspace with a file the tool may read and one it may
// not, and lathe's configuration.
func permsDirs(t *testing.T) string {
	t.Helper()
	ws, _ := escapeDirs(t)
	if err := os.MkdirAll(filepath.Join(ws, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(ws, "src", "a.txt"), "source")
	write(t, filepath.Join(ws, "private.txt"), "private")
	write(t, filepath.Join(ws, "lathe.toml"), "# the configuration\n")
	return ws
}

// Through WASI, the host's checks decide each file operation: what the
// permissions name is reached, nothing else, and lathe's configuration is
// never writable, whatever the permissions say.
func TestPermissionsFiles(t *testing.T) {
	ws := permsDirs(t)
	perms := host.Permissions{Read: []string{"src/**"}, Write: []string{"out/", "lathe.toml"}}
	read := guestTool(t, "read", wasm.Options{Workspace: ws, Perms: perms}, nil)
	if out := call(t, read, map[string]any{"path": "src/a.txt"}); text(out) != "source" {
		t.Fatalf("reading a permitted file: %s", text(out))
	}
	for _, p := range []string{"private.txt", "inside.txt", "src/../private.txt", ws + "/private.txt"} {
		if out := call(t, read, map[string]any{"path": p}); !out.Result.IsError || text(out) == "private" {
			t.Errorf("reading %s outside the permissions: %s", p, text(out))
		}
	}
	if err := os.Mkdir(filepath.Join(ws, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	wr := guestTool(t, "write", wasm.Options{Workspace: ws, Perms: perms}, nil)
	if out := call(t, wr, map[string]any{"path": "out/r.txt", "data": "result"}); out.Result.IsError {
		t.Fatalf("writing a permitted file: %s", text(out))
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "out", "r.txt")); string(b) != "result" {
		t.Errorf("out/r.txt holds %q", b)
	}
	for _, p := range []string{"src/a.txt", "lathe.toml", "new.txt"} {
		if out := call(t, wr, map[string]any{"path": p, "data": "x"}); !out.Result.IsError {
			t.Errorf("writing %s: %s, want a refusal", p, text(out))
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "lathe.toml")); string(b) != "# the configuration\n" {
		t.Errorf("lathe.toml was changed: %q", b)
	}
	list := guestTool(t, "list", wasm.Options{Workspace: ws, Perms: perms}, nil)
	if out := call(t, list, map[string]any{"path": "."}); !out.Result.IsError {
		t.Errorf("listing the workspace, which the permissions do not name: %s", text(out))
	}
	if out := call(t, list, map[string]any{"path": "src"}); text(out) != "a.txt" {
		t.Errorf("listing src: %s", text(out))
	}
}

// hostAnswer is one host response as the guest saw it.
type hostAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *host.Error     `json:"error"`
}

func hostAnswers(t *testing.T, out *tool.Outcome) []hostAnswer {
	t.Helper()
	if out.Result == nil || out.Result.IsError {
		t.Fatalf("hostcall: %s", text(out))
	}
	var as []hostAnswer
	for _, l := range strings.Split(text(out), "\n") {
		var a hostAnswer
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatalf("answer %q: %v", l, err)
		}
		as = append(as, a)
	}
	return as
}

// The host API over standard input and output: the same requests as a
// VFS tool's, checked the same way, path traversal and permissions the
// tool lacks refused with CodeDenied.
func TestHostAPIStdio(t *testing.T) {
	ws := permsDirs(t)
	perms := host.Permissions{Read: []string{"src/**"}}
	hc := guestTool(t, "hostcall", wasm.Options{Workspace: ws, Perms: perms}, nil)
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"fs/read","params":{"path":"src/a.txt"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"fs/read","params":{"path":"../outside/secret.txt"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"fs/read","params":{"path":"src/../private.txt"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"fs/write","params":{"path":"src/a.txt","data":"eA=="}}`,
		`{"jsonrpc":"2.0","id":5,"method":"net/fetch","params":{"url":"http://127.0.0.1:1/"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"env/get","params":{"name":"HOME"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"fs/read","params":{"path":"abslink"}}`,
	}
	as := hostAnswers(t, call(t, hc, map[string]any{"lines": lines}))
	if len(as) != len(lines) {
		t.Fatalf("%d answers to %d requests", len(as), len(lines))
	}
	var r host.ReadResult
	if as[0].Error != nil || json.Unmarshal(as[0].Result, &r) != nil || string(r.Data) != "source" {
		t.Errorf("fs/read of a permitted file: %+v", as[0])
	}
	for _, a := range as[1:] {
		if a.Error == nil || a.Error.Code != host.CodeDenied {
			t.Errorf("request %s: %+v, want CodeDenied", a.ID, a)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "src", "a.txt")); string(b) != "source" {
		t.Errorf("src/a.txt was written: %q", b)
	}
}

// A Go tool that uses the SDK's host client, as a VFS tool does, works
// unchanged as a WASM module: request after request, denials included.
func TestSDKHostClient(t *testing.T) {
	ws := permsDirs(t)
	hc := guestTool(t, "sdkhost", wasm.Options{Workspace: ws, Perms: host.Permissions{Read: []string{"src/**", "inside.txt"}}}, nil)
	out := call(t, hc, map[string]any{"lines": []string{"src/a.txt", "inside.txt", "private.txt", "src/a.txt"}})
	if want := "source\ninside\ndenied\nsource"; text(out) != want {
		t.Errorf("got %q, want %q", text(out), want)
	}
}

// The host function lathe.host_call takes the same requests, for a guest
// that would rather call than write lines; a response longer than the
// guest's buffer waits for host_result.
func TestHostCallFunction(t *testing.T) {
	ws := permsDirs(t)
	perms := host.Permissions{Read: []string{"src/**"}}
	h, err := host.New(host.Config{Tool: "hc", Workspace: ws, Perms: perms})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, c := range []struct {
		req      string
		cap      int
		want     string
		denied   bool
		whatfor  string
		overflow bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"fs/read","params":{"path":"src/a.txt"}}`, 4096, `"data":"c291cmNl"`, false, "a permitted read", false},
		{`{"jsonrpc":"2.0","id":2,"method":"fs/read","params":{"path":"../outside/secret.txt"}}`, 4096, "", true, "a path out of the workspace", false},
		{`{"jsonrpc":"2.0","id":3,"method":"fs/read","params":{"path":"private.txt"}}`, 4096, "", true, "a file the permissions do not name", false},
		{`{"jsonrpc":"2.0","id":4,"method":"fs/read","params":{"path":"src/a.txt"}}`, 8, `"data":"c291cmNl"`, false, "a response longer than the buffer", true},
	} {
		p := filepath.Join(t.TempDir(), "hc.wasm")
		if err := os.WriteFile(p, hostCallModule(c.req, c.cap), 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := shared.Load(context.Background(), p, wasm.Options{Host: h, Workspace: ws, Perms: perms})
		if err != nil {
			t.Fatal(err)
		}
		out := call(t, m.Tool(tool.Definition{Name: "hc", InputSchema: json.RawMessage(`{"type":"object"}`)}, ""), map[string]any{})
		got := text(out)
		switch {
		case out.Result == nil || out.Result.IsError:
			t.Errorf("%s: %s", c.whatfor, got)
		case c.denied && !strings.Contains(got, `"code":-32001`):
			t.Errorf("%s: %s, want CodeDenied", c.whatfor, got)
		case !c.denied && !strings.Contains(got, c.want):
			t.Errorf("%s: %s, want it to hold %s", c.whatfor, got, c.want)
		}
	}
}

// hostCallModule assembles a module whose _start sends req through
// lathe.host_call with a response buffer of cap bytes, then, if the
// response did not fit, fetches it with host_result into a large one, and
// writes it on standard output.
func hostCallModule(req string, cap int) []byte {
	uleb := func(n int) []byte { return binary.AppendUvarint(nil, uint64(n)) }
	sleb := func(n int) []byte {
		var out []byte
		for {
			b := byte(n & 0x7f)
			n >>= 7
			if (n == 0 && b&0x40 == 0) || (n == -1 && b&0x40 != 0) {
				return append(out, b)
			}
			out = append(out, b|0x80)
		}
	}
	str := func(s string) []byte { return append(uleb(len(s)), s...) }
	section := func(id byte, body []byte) []byte { return append(append([]byte{id}, uleb(len(body))...), body...) }
	i32 := func(n int) []byte { return append([]byte{0x41}, sleb(n)...) }
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	const reqAt, respAt, bigAt = 1024, 8192, 16384
	b := []byte("\x00asm\x01\x00\x00\x00")
	// Types: 0 fd_write (i32 i32 i32 i32) -> i32; 1 () -> ();
	// 2 host_call (i32 i32 i32 i32) -> i64; 3 host_result (i32 i32) -> i64.
	b = append(b, section(1, cat([]byte{4},
		[]byte{0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f},
		[]byte{0x60, 0, 0},
		[]byte{0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7e},
		[]byte{0x60, 2, 0x7f, 0x7f, 1, 0x7e}))...)
	b = append(b, section(2, cat([]byte{3},
		str("wasi_snapshot_preview1"), str("fd_write"), []byte{0x00, 0},
		str("lathe"), str("host_call"), []byte{0x00, 2},
		str("lathe"), str("host_result"), []byte{0x00, 3}))...)
	b = append(b, section(3, []byte{1, 1})...)
	b = append(b, section(5, []byte{1, 0x00, 1})...)
	b = append(b, section(7, cat([]byte{1}, str("_start"), []byte{0x00, 3}))...)
	store := []byte{0x36, 0x02, 0x00} // i32.store align=4 offset=0
	code := cat(
		[]byte{0x01, 0x01, 0x7f}, // one local: n (i32)
		// n = host_call(req, len, resp, cap)
		i32(reqAt), i32(len(req)), i32(respAt), i32(cap), []byte{0x10, 1, 0xa7, 0x21, 0},
		// iov = {resp, n}
		i32(0), i32(respAt), store,
		// if n > cap: n = host_result(big, 4096); iov.base = big
		[]byte{0x20, 0}, i32(cap), []byte{0x4a, 0x04, 0x40},
		i32(bigAt), i32(4096), []byte{0x10, 2, 0xa7, 0x21, 0},
		i32(0), i32(bigAt), store,
		[]byte{0x0b},
		i32(4), []byte{0x20, 0}, store,
		// fd_write(1, iov, 1, nwritten)
		i32(1), i32(0), i32(1), i32(8), []byte{0x10, 0, 0x1a, 0x0b},
	)
	b = append(b, section(10, cat([]byte{1}, uleb(len(code)), code))...)
	seg := cat([]byte{0x00}, i32(reqAt), []byte{0x0b}, str(req))
	b = append(b, section(11, cat([]byte{1}, seg))...)
	return b
}

// A file operation the module does itself through WASI is an operation of
// its call, as a host request is: the engine emits it, allowed or denied,
// with the call's id.
func TestWASIOperationsRecorded(t *testing.T) {
	ws := permsDirs(t)
	read := guestTool(t, "read", wasm.Options{Workspace: ws, Perms: host.Permissions{Read: []string{"src/**"}}}, nil)
	e := lathe.New(lathe.Options{})
	defer e.Close()
	if err := e.Register(read); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ops []lathe.Event
	cancel := e.Subscribe(func(ev lathe.Event) {
		mu.Lock()
		ops = append(ops, ev)
		mu.Unlock()
	}, lathe.EventOperation)
	defer cancel()
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	for _, p := range []string{"src/a.txt", "private.txt"} {
		e.Call(ctx, &tool.Call{ID: "c-" + p, Name: "read", Arguments: json.RawMessage(`{"path":"` + p + `"}`)})
	}
	found := map[string]string{}
	deadline := time.Now().Add(10 * time.Second)
	for len(found) < 2 && time.Now().Before(deadline) {
		mu.Lock()
		for _, ev := range ops {
			if ev.Operation != nil && ev.Operation.Kind == "read" && ev.CallID == "c-"+ev.Operation.Subject {
				found[ev.Operation.Subject] = ev.Operation.Approval
			}
		}
		mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	if found["src/a.txt"] != "allow" || found["private.txt"] != "deny" {
		t.Errorf("operations seen: %v, want the read of src/a.txt allowed and of private.txt denied, each with its call", found)
	}
}

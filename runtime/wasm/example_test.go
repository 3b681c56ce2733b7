package wasm_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/runtime/wasm"
	"github.com/lathe-tools/lathe/tool"
)

// A WASM module becomes a tool: the runtime compiles it once, the engine
// owns the runtime, and each call runs a fresh instance with the workspace
// as its only directory, checked by the tool's host.
func ExampleRuntime() {
	ctx := context.Background()
	ws, _ := os.MkdirTemp("", "example-ws-")
	defer os.RemoveAll(ws)
	module := filepath.Join(ws, "hello.wasm")
	os.WriteFile(module, helloModule("hello from WASM\n"), 0o644)

	rt, err := wasm.NewRuntime(wasm.Config{}) // wasm.Config{CacheDir: wasm.DefaultCacheDir()} keeps compiled code
	if err != nil {
		fmt.Println(err)
		return
	}
	h, _ := host.New(host.Config{Tool: "hello", Workspace: ws, Perms: host.Permissions{Read: []string{"."}}})
	m, err := rt.Load(ctx, module, wasm.Options{Host: h, Workspace: h.Workspace(), Perms: h.Permissions()})
	if err != nil {
		fmt.Println(err)
		return
	}
	e := lathe.New(lathe.Options{})
	e.Own(rt)
	e.Own(h)
	defer e.Close()
	e.Register(m.Tool(tool.Definition{Name: "hello", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: tool.Annotations{ReadOnlyHint: true}}, ""))

	out := e.Call(ctx, &tool.Call{Name: "hello", Arguments: json.RawMessage(`{}`)})
	fmt.Print(out.Result.Text())
	// Output: hello from WASM
}

// helloModule assembles a WASI command module that writes text on its
// standard output: what a compiler would make of a program that prints it.
func helloModule(text string) []byte {
	leb := func(n int) []byte { return binary.AppendUvarint(nil, uint64(n)) }
	str := func(s string) []byte { return append(leb(len(s)), s...) }
	section := func(id byte, body []byte) []byte { return append(append([]byte{id}, leb(len(body))...), body...) }
	b := []byte("\x00asm\x01\x00\x00\x00")
	b = append(b, section(1, []byte{2, 0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f, 0x60, 0, 0})...)
	b = append(b, section(2, append([]byte{1}, append(append(str("wasi_snapshot_preview1"), str("fd_write")...), 0x00, 0)...))...)
	b = append(b, section(3, []byte{1, 1})...)
	b = append(b, section(5, []byte{1, 0x00, 1})...)
	b = append(b, section(7, append([]byte{1}, append(str("_start"), 0x00, 1)...))...)
	code := []byte{0x00, 0x41, 1, 0x41, 0, 0x41, 1, 0x41, 8, 0x10, 0, 0x1a, 0x0b}
	b = append(b, section(10, append([]byte{1}, append(leb(len(code)), code...)...))...)
	iov := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 16), uint32(len(text)))
	seg := func(off int, data []byte) []byte {
		return append(append([]byte{0x00, 0x41}, append(leb(off), 0x0b)...), append(leb(len(data)), data...)...)
	}
	return append(b, section(11, append(append([]byte{2}, seg(0, iov)...), seg(16, []byte(text))...))...)
}

package load_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/tool"
)

// printModule assembles a WASI command module that writes text on its
// standard output, whatever its request: the answer to the schema action
// when text is one, and plain output (a text result) to a call.
func printModule(text string) []byte {
	leb := func(n int) []byte { return binary.AppendUvarint(nil, uint64(n)) }
	str := func(s string) []byte { return append(leb(len(s)), s...) }
	section := func(id byte, body []byte) []byte { return append(append([]byte{id}, leb(len(body))...), body...) }
	b := []byte("\x00asm\x01\x00\x00\x00")
	// Types: 0 (i32 i32 i32 i32) -> i32 for fd_write, 1 () -> ().
	b = append(b, section(1, []byte{2, 0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f, 0x60, 0, 0})...)
	imp := append(append(str("wasi_snapshot_preview1"), str("fd_write")...), 0x00, 0)
	b = append(b, section(2, append([]byte{1}, imp...))...)
	b = append(b, section(3, []byte{1, 1})...)       // _start has type 1
	b = append(b, section(5, []byte{1, 0x00, 1})...) // one page of memory
	b = append(b, section(7, append(append([]byte{2}, append(str("_start"), 0x00, 1)...), append(str("memory"), 0x02, 0)...))...)
	// _start: fd_write(1, iov at 0, 1 iov, nwritten at 8); drop.
	code := []byte{0x00, 0x41, 1, 0x41, 0, 0x41, 1, 0x41, 8, 0x10, 0, 0x1a, 0x0b}
	b = append(b, section(10, append([]byte{1}, append(leb(len(code)), code...)...))...)
	// Data: the iov {16, len(text)} at 0, the text at 16.
	iov := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 16), uint32(len(text)))
	seg := func(off int, data []byte) []byte {
		return append(append([]byte{0x00, 0x41}, append(leb(off), 0x0b)...), append(leb(len(data)), data...)...)
	}
	b = append(b, section(11, append(append([]byte{2}, seg(0, iov)...), seg(16, []byte(text))...))...)
	return b
}

const schemaText = `{"tools":[{"name":"hi","summary":"Say hi.","parameters":{"type":"object"}}]}`

// A [toolsets.NAME] and a [tools.NAME] whose command is a .wasm file run
// as WASM tools: the module describes itself, and a call runs it.
func TestLoadWASM(t *testing.T) {
	ws := workspace(t, map[string]string{"lathe.toml": `
[toolsets.mods]
command = ["tools/hi.wasm"]
prefix = "m_"

[tools.single]
command = ["tools/hi.wasm"]
runtime = "wasm"

[[policy.rules]]
tool = "*"
approval = "allow"
`})
	if err := os.MkdirAll(filepath.Join(ws, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "tools", "hi.wasm"), printModule(schemaText), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	w, err := load.Open(ctx, load.Options{Dir: ws, Trust: trustAll})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, name := range []string{"m_hi", "single"} {
		d, ok := w.Engine.Lookup(name)
		if !ok || d.Runtime != "wasm" || d.Summary != "Say hi." {
			t.Fatalf("%s: %+v (found %v), want the module's tool, runtime wasm; tools: %s", name, d, ok, names(w))
		}
		out := w.Engine.Call(ctx, &tool.Call{Name: name, Arguments: json.RawMessage(`{}`)})
		if out.Result == nil || out.Result.IsError || out.Result.Text() != schemaText {
			t.Errorf("%s: got %+v, want the module's output", name, out.Result)
		}
	}
}

// A .wasm command that is not a WASI command module is a configuration
// error naming the table, its line and what is wrong.
func TestLoadWASMNotACommand(t *testing.T) {
	ws := workspace(t, map[string]string{"lathe.toml": "\n[tools.lib]\ncommand = [\"lib.wasm\"]\n",
		"lib.wasm": "\x00asm\x01\x00\x00\x00"})
	_, err := load.Open(testContext(t), load.Options{Dir: ws, Trust: trustAll})
	var ce *load.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "lathe.toml:2") ||
		!strings.Contains(err.Error(), "not a WASI command module: it exports no _start") {
		t.Fatalf("Open = %v, want a ConfigError at lathe.toml:2 saying it is not a WASI command module", err)
	}
}

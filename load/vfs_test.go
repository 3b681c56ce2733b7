package load_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/tool"
)

// vfsScript is a VFS tool in POSIX shell: it describes itself, asks the
// host for note.txt, and tries to read the same file itself from the
// workspace path it is given, reporting both.
const vfsScript = `read -r req
case "$req" in *'"action":"schema"'*)
  echo '{"tools":[{"name":"note","summary":"Read the note.","parameters":{"type":"object","properties":{}},"permissions":{"read":["note.txt"]}}]}'; exit 0;;
esac
echo '{"jsonrpc":"2.0","id":1,"method":"fs/read","params":{"path":"note.txt"}}'
read -r resp
direct=$(cat "$1/note.txt" 2>/dev/null | tr -d '\n')
printf '{"type":"success","content":"done","structured":{"host":%s,"direct":"%s"}}\n' "${resp:-null}" "$direct"
`

func vfsWorkspace(t *testing.T, toml string) string {
	t.Helper()
	ws := workspace(t, map[string]string{"tool.sh": vfsScript, "note.txt": "hello note"})
	return workspace2(t, ws, strings.ReplaceAll(toml, "WS", ws))
}

// workspace2 adds lathe.toml to ws.
func workspace2(t *testing.T, ws, toml string) string {
	t.Helper()
	if err := os.WriteFile(ws+"/lathe.toml", []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

func openTrusted(t *testing.T, ws string) (*load.Workspace, error) {
	t.Helper()
	return load.Open(testContext(t), load.Options{Dir: ws,
		Trust: func(context.Context, load.Untrusted) (bool, error) { return true, nil }})
}

// noteCall calls name and returns what the host gave it and what it read
// itself.
func noteCall(t *testing.T, w *load.Workspace, name string) (hostData, direct string) {
	t.Helper()
	out := w.Engine.Call(testContext(t), &tool.Call{Name: name, Arguments: json.RawMessage(`{}`)})
	if out.Result == nil || out.Result.IsError {
		t.Fatalf("%s: %+v %v", name, out.Result, out.Err())
	}
	var m struct {
		Host struct {
			Result struct {
				Data []byte `json:"data"`
			} `json:"result"`
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		} `json:"host"`
		Direct string `json:"direct"`
	}
	if err := json.Unmarshal(out.Result.Structured, &m); err != nil {
		t.Fatalf("%s: %s: %v", name, out.Result.Structured, err)
	}
	if m.Host.Error != nil {
		return fmt.Sprintf("error %d", m.Host.Error.Code), m.Direct
	}
	return string(m.Host.Result.Data), m.Direct
}

// TestVFSTools loads VFS tools from a [tools.NAME] and a [toolsets.NAME]
// table: each describes itself confined, reads through the host what its
// read key allows (and nothing else), and cannot read the workspace
// itself, even where the [sandbox] profile is dev.
func TestVFSTools(t *testing.T) {
	ws := vfsWorkspace(t, `
[sandbox]
profile = "dev"

[tools.note]
runtime = "vfs"
command = ["sh", "tool.sh", "WS"]
read = ["note.txt"]

[toolsets.more]
runtime = "vfs"
command = ["sh", "tool.sh", "WS"]
prefix = "more_"

# The same script as a plain process reads the note itself.
[tools.plain]
command = ["sh", "tool.sh", "WS"]

[[policy.rules]]
tool = "*"
approval = "allow"
`)
	w, err := openTrusted(t, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if d, _ := w.Engine.Lookup("note"); d.Runtime != "vfs" || d.Summary != "Read the note." {
		t.Errorf("note: %+v, want the described vfs tool", d)
	}
	// What the tool declares it needs is recorded for the person, and
	// grants nothing (more_note declares the same and is denied below).
	for _, n := range []string{"note", "more_note"} {
		if d := w.Declared[n]; len(d.Read) != 1 || d.Read[0] != "note.txt" {
			t.Errorf("Declared[%s] = %+v, want read note.txt", n, d)
		}
	}
	plain := w.Engine.Call(testContext(t), &tool.Call{Name: "plain", Arguments: json.RawMessage(`{}`)})
	if plain.Result == nil || !strings.Contains(plain.Result.Text(), `"direct":"hello note"`) {
		t.Fatalf("as a process the script could not read the note itself (%+v), so the test proves nothing", plain.Result)
	}
	if got, direct := noteCall(t, w, "note"); got != "hello note" || direct != "" {
		t.Errorf("note: host gave %q, the tool read %q itself; want the note from the host only", got, direct)
	}
	if got, direct := noteCall(t, w, "more_note"); got != "error -32001" || direct != "" {
		t.Errorf("more_note: host gave %q, the tool read %q itself; want a denial and nothing", got, direct)
	}
}

// TestVFSToolRefusesDev: a VFS tool whose table asks for the dev profile
// is a configuration error at its line.
func TestVFSToolRefusesDev(t *testing.T) {
	ws := vfsWorkspace(t, `
[tools.note]
runtime = "vfs"
command = ["sh", "tool.sh"]
profile = "dev"
`)
	w, err := openTrusted(t, ws)
	if err == nil {
		w.Close()
		t.Fatal("a VFS tool under dev was loaded")
	}
	var ce *load.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "lathe.toml:2") || !strings.Contains(err.Error(), `"dev"`) {
		t.Errorf("err = %v, want a config error at lathe.toml:2 about dev", err)
	}
}

// TestVFSSchemaCached: a VFS binary's description is kept in the schema
// cache, as a process binary's is, so that the next load asks it nothing.
func TestVFSSchemaCached(t *testing.T) {
	ws := vfsWorkspace(t, `
[tools.note]
runtime = "vfs"
command = ["sh", "tool.sh"]
`)
	dir := filepath.Join(os.Getenv("LATHE_CACHE_DIR"), "schemas")
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("the cache holds %d entries before the first load", len(ents))
	}
	w, err := openTrusted(t, ws)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the cache holds %d entries after loading one VFS tool, want 1", len(ents))
	}
}

// TestConfinedHostsClosed: every confined tool's host holds a descriptor of
// the workspace, and so does the handle the standard tools and batches
// share; closing the workspace releases them all, so that a program that
// opens and closes workspaces (a server, a test suite) does not run out of
// descriptors.
func TestConfinedHostsClosed(t *testing.T) {
	ws := vfsWorkspace(t, `
[tools.one]
runtime = "vfs"
command = ["sh", "tool.sh", "WS"]
read = ["note.txt"]
parameters = {}

[tools.two]
runtime = "vfs"
command = ["sh", "tool.sh", "WS"]
read = ["note.txt"]
parameters = {}
`)
	before := openFiles(t)
	for range 5 {
		w, err := openTrusted(t, ws)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A few descriptors may come and go with the runtime (the log, the
	// cache); ten hosts held open would add at least ten.
	if after := openFiles(t); after > before+3 {
		t.Errorf("open descriptors went from %d to %d after opening and closing the workspace five times", before, after)
	}
}

func openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open descriptors: %v", err)
	}
	return len(fds)
}

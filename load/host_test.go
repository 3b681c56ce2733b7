package load

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
)

// hostFor builds the host from the tool's table: its permissions, and
// denials that name the table and where it is.
func TestHostFor(t *testing.T) {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	os.WriteFile(filepath.Join(ws, "src", "a.txt"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(ws, "secret"), []byte("s"), 0o644)
	cfg, err := config.Parse(filepath.Join(ws, "lathe.toml"), []byte(`
[tools.probe]
command = ["./probe"]
read = ["src/**"]

[tools.far]
command = ["./far"]
read = ["/elsewhere"]

[toolsets.mods]
command = ["mods.wasm"]
read = ["src/"]
`))
	if err != nil {
		t.Fatal(err)
	}
	l := &localLoader{cfg: cfg, ws: ws}
	t1 := cfg.Tools["probe"]
	h, err := l.hostFor("probe", "tools.probe", t1.Pos, t1.Permissions(), "dev")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := h.Begin(ctx)
	defer s.End()
	if _, err := s.Do(ctx, host.MethodRead, json.RawMessage(`{"path":"src/a.txt"}`)); err != nil {
		t.Fatalf("read src/a.txt: %v", err)
	}
	_, err = s.Do(ctx, host.MethodRead, json.RawMessage(`{"path":"secret"}`))
	if err == nil || !strings.Contains(err.Error(), `to read in [tools.probe] (`+filepath.Join(ws, "lathe.toml")+`:2)`) {
		t.Fatalf("read secret = %v, want a denial naming [tools.probe] and its place", err)
	}
	_, err = l.hostFor("far", "tools.far", cfg.Tools["far"].Pos, cfg.Tools["far"].Permissions(), "")
	var ce *config.Error
	if err == nil || !strings.Contains(err.Error(), "outside the workspace") || !errorsAs(err, &ce) || ce.Pos.Line != 6 {
		t.Fatalf("hostFor with an absolute path outside = %v, want a config error at line 6", err)
	}
	// A WASM toolset's module has one host for all its tools: its denials
	// name the toolset's table, whose keys are the module's permissions.
	ts := cfg.Toolsets["mods"]
	hm, err := l.hostFor("mods", "toolsets.mods", ts.Pos, ts.Permissions(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer hm.Close()
	sm := hm.Begin(ctx)
	defer sm.End()
	_, err = sm.Do(ctx, host.MethodRead, json.RawMessage(`{"path":"secret"}`))
	if err == nil || !strings.Contains(err.Error(), `to read in [toolsets.mods] (`+filepath.Join(ws, "lathe.toml")+`:10)`) {
		t.Fatalf("read secret through the toolset's host = %v, want a denial naming [toolsets.mods] and its place", err)
	}
}

// What a tool declares is kept for the person to see, and grants nothing.
func TestDeclare(t *testing.T) {
	l := &localLoader{}
	l.declare("quiet", protocol.ToolSchema{Name: "quiet"})
	l.declare("fmt", protocol.ToolSchema{Name: "fmt", Permissions: &protocol.Permissions{Read: []string{"src/**"}}})
	if _, ok := l.declared["quiet"]; ok {
		t.Error("a tool that declares nothing is recorded")
	}
	if p := l.declared["fmt"]; len(p.Read) != 1 || p.Read[0] != "src/**" {
		t.Errorf("declared = %+v", l.declared)
	}
}

func errorsAs(err error, ce **config.Error) bool {
	e, ok := err.(*config.Error)
	*ce = e
	return ok
}

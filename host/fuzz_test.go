package host_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/host"
)

// FuzzPaths tries paths against a tool granted src/ to read and out/ to
// write, in a workspace with links in both: whatever the path, a read
// returns only what lies in src/ or out/, and a write changes nothing
// outside out/.
func FuzzPaths(f *testing.F) {
	for _, p := range []string{"src/main.go", "src/../secret/key", "out/link", "out/../lathe.toml", "../outside/secret",
		"src/up/secret", ".lathe/audit.db", "out/./x", "/", ".", "src//main.go", "out/up/key", "OUT/x"} {
		f.Add(p)
	}
	fx := newFixtureF(f)
	os.Symlink("../secret", filepath.Join(fx.ws, "src", "up"))
	os.Symlink("../secret", filepath.Join(fx.ws, "out", "up"))
	os.Symlink("../lathe.toml", filepath.Join(fx.ws, "out", "link"))
	h, err := host.New(host.Config{Tool: "fuzz", Workspace: fx.ws, Perms: host.Permissions{Read: []string{"src/"}, Write: []string{"out/"}}})
	if err != nil {
		f.Fatal(err)
	}
	defer h.Close()
	f.Fuzz(func(t *testing.T, p string) {
		s := h.Begin(testCtx(t))
		defer s.End()
		var r host.ReadResult
		if e := call(t, s, host.MethodRead, host.ReadParams{Path: p}, &r); e == nil {
			if d := string(r.Data); strings.Contains(d, "secret") || strings.Contains(d, "configuration") || strings.Contains(d, "audit") {
				t.Fatalf("read %q returned %q", p, d)
			}
		}
		call(t, s, host.MethodWrite, host.WriteParams{Path: p, Data: []byte("fuzzed"), MakeDirs: true}, nil)
		call(t, s, host.MethodRemove, host.RemoveParams{Path: p}, nil)
		for rel, want := range map[string]string{"secret/key": "workspace secret\n", "lathe.toml": "# configuration\n",
			".lathe/audit.db": "audit\n", "src/main.go": "package main\n"} {
			if b, err := os.ReadFile(filepath.Join(fx.ws, rel)); err != nil || string(b) != want {
				t.Fatalf("after %q: %s is %q, %v", p, rel, b, err)
			}
		}
		if b, err := os.ReadFile(filepath.Join(fx.outside, "secret")); err != nil || string(b) != "outside secret\n" {
			t.Fatalf("after %q: the outside secret is %q, %v", p, b, err)
		}
	})
}

package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/lathe-tools/lathe/host"
)

// BenchmarkRead4K compares fs/read of a 4 KiB file through Session.Do
// (decode, resolve, permission and policy checks, the descriptor walk,
// encode) with os.ReadFile of the same file, in the same run: the ratio
// is the host's cost (docs/benchmarks.md).
func BenchmarkRead4K(b *testing.B) {
	ws := b.TempDir()
	os.MkdirAll(filepath.Join(ws, "src", "pkg"), 0o755)
	path := filepath.Join(ws, "src", "pkg", "file.txt")
	if err := os.WriteFile(path, make([]byte, 4096), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("os.ReadFile", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadFile(path); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Session.Do", func(b *testing.B) {
		h, err := host.New(host.Config{Tool: "bench", Workspace: ws, Perms: host.Permissions{Read: []string{"src/**"}}})
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		ctx := context.Background()
		s := h.Begin(ctx)
		defer s.End()
		params := json.RawMessage(`{"path":"src/pkg/file.txt"}`)
		for b.Loop() {
			if _, err := s.Do(ctx, host.MethodRead, params); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/host"
)

// BenchmarkRead4K compares fs/read of a 4 KiB file through Session.Do
// (decode, resolve, permission and policy checks, the descriptor walk,
// encode) with os.ReadFile of the same file. The two alternate within
// each iteration, so that drift in the machine's speed touches both
// alike; it reports host-ns/op, os-ns/op and their ratio host/os
// (docs/benchmarks.md).
func BenchmarkRead4K(b *testing.B) {
	ws := b.TempDir()
	os.MkdirAll(filepath.Join(ws, "src", "pkg"), 0o755)
	path := filepath.Join(ws, "src", "pkg", "file.txt")
	if err := os.WriteFile(path, make([]byte, 4096), 0o644); err != nil {
		b.Fatal(err)
	}
	h, err := host.New(host.Config{Tool: "bench", Workspace: ws, Perms: host.Permissions{Read: []string{"src/**"}}})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	ctx := context.Background()
	s := h.Begin(ctx)
	defer s.End()
	params := json.RawMessage(`{"path":"src/pkg/file.txt"}`)
	var hostT, osT time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		if _, err := s.Do(ctx, host.MethodRead, params); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := os.ReadFile(path); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		hostT += t1.Sub(t0)
		osT += t2.Sub(t1)
		n++
	}
	b.ReportMetric(float64(hostT.Nanoseconds())/float64(n), "host-ns/op")
	b.ReportMetric(float64(osT.Nanoseconds())/float64(n), "os-ns/op")
	b.ReportMetric(float64(hostT)/float64(osT), "host/os")
}

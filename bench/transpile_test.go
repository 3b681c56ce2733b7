package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/runtime/js/transpile"
)

// BenchmarkJSFirstLoad measures the first load of a TypeScript tool (a
// tool file importing four modules) with and without the transpile cache:
// esbuild bundling it, against a cache hit, which reads the record and
// checks every input's hash. The two alternate in each iteration, so
// that drift in the machine's speed touches both alike. It reports
// esbuild-µs/op, cached-µs/op and their ratio esbuild/cached.
func BenchmarkJSFirstLoad(b *testing.B) {
	dir := b.TempDir()
	var imports strings.Builder
	for i := range 4 {
		fmt.Fprintf(&imports, "import { f%d } from \"./lib/m%d.ts\";\n", i, i)
		src := fmt.Sprintf("export function f%d(s: string): string {\n  const parts: string[] = s.split(\" \");\n  return parts.map((p) => p.toUpperCase()).join(\"-%d-\");\n}\n", i, i)
		writeTS(b, filepath.Join(dir, "lib", fmt.Sprintf("m%d.ts", i)), src)
	}
	writeTS(b, filepath.Join(dir, "tool.ts"), imports.String()+`
interface Args { text: string }
export default {
  description: "Joins the words.",
  inputSchema: { type: "object", properties: { text: { type: "string" } } },
  execute(args: Args): string { return f0(f1(f2(f3(args.text)))); },
};
`)
	cache := filepath.Join(b.TempDir(), "js")
	file := filepath.Join(dir, "tool.ts")
	if _, err := transpile.Build(file, transpile.Options{CacheDir: cache}); err != nil {
		b.Fatal(err)
	}
	var cold, warm time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := transpile.Build(file, transpile.Options{}); err != nil {
			b.Fatal(err)
		}
		cold += time.Since(start)
		start = time.Now()
		r, err := transpile.Build(file, transpile.Options{CacheDir: cache})
		if err != nil || !r.Cached {
			b.Fatalf("the cache missed: %v", err)
		}
		warm += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(cold.Microseconds())/n, "esbuild-µs/op")
	b.ReportMetric(float64(warm.Microseconds())/n, "cached-µs/op")
	b.ReportMetric(float64(cold)/float64(warm), "esbuild/cached")
}

func writeTS(b *testing.B, p, s string) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		b.Fatal(err)
	}
}

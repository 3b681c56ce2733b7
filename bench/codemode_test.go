package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/codemode"
	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// cmFiles is how many files the code-mode task reads.
const cmFiles = 20

// cmScript does the code-mode task in one run_code call: read every file,
// count the lines that mention TODO, return the three files with most.
const cmScript = `
const counts: {path: string, n: number}[] = [];
for (let i = 0; i < 20; i++) {
  const path = "src/f" + String(i).padStart(2, "0") + ".txt";
  const text: string = await tools.read_file({path});
  counts.push({path, n: text.split("\n").filter(l => l.includes("TODO")).length});
}
counts.sort((a, b) => b.n - a.n || (a.path < b.path ? -1 : 1));
return counts.slice(0, 3);
`

// cmScriptAll is cmScript with the reads started together (Promise.all),
// which run_code runs at once, a few at a time.
const cmScriptAll = `
const paths = Array.from({length: 20}, (_, i) => "src/f" + String(i).padStart(2, "0") + ".txt");
const texts: string[] = await Promise.all(paths.map(path => tools.read_file({path})));
const counts = paths.map((path, i) => ({path, n: texts[i].split("\n").filter(l => l.includes("TODO")).length}));
counts.sort((a, b) => b.n - a.n || (a.path < b.path ? -1 : 1));
return counts.slice(0, 3);
`

// cmWorkspace writes the task's files: file i holds 200 lines, i*3 of
// them with a TODO, so that the answer is known.
func cmWorkspace(b *testing.B) *load.Workspace {
	b.Helper()
	home := b.TempDir()
	b.Setenv("HOME", home)
	b.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	b.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	b.Setenv("LATHE_CACHE_DIR", filepath.Join(home, "cache"))
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "src"), 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range cmFiles {
		var s strings.Builder
		for l := range 200 {
			if l < i*3 {
				fmt.Fprintf(&s, "line %d: TODO tidy this up\n", l)
			} else {
				fmt.Fprintf(&s, "line %d: nothing to see here, only ordinary text\n", l)
			}
		}
		if err := os.WriteFile(filepath.Join(ws, "src", fmt.Sprintf("f%02d.txt", i)), []byte(s.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	toml := "[[policy.rules]]\ntool = \"run_code\"\napproval = \"allow\"\n"
	if err := os.WriteFile(filepath.Join(ws, "lathe.toml"), []byte(toml), 0o644); err != nil {
		b.Fatal(err)
	}
	w, err := load.Open(context.Background(), load.Options{Dir: ws,
		Trust: func(context.Context, load.Untrusted) (bool, error) { return true, nil }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	return w
}

// cmTop3 is the answer the task must give, as run_code's script returns it.
const cmTop3 = `[{"path":"src/f19.txt","n":57},{"path":"src/f18.txt","n":54},{"path":"src/f17.txt","n":51}]`

// BenchmarkCodeMode compares the two ways a model can do one task (read
// 20 files, count the lines that mention TODO, report the top 3): 20
// direct read_file calls, whose results all go back to the model, which
// counts; against one run_code call whose script does the reading and
// counting and returns only the answer (code-ms; code-all-ms with the reads
// started together, Promise.all, which run_code runs a few at a time). Both run through the same engine
// (policy, audit), in alternating rounds. It reports, per task, the calls
// the model makes (direct-calls, code-calls), the bytes returned to it
// (direct-bytes, code-bytes), the wall time of each in milliseconds
// (direct-ms, code-ms; the model's own time, which the direct way spends
// 20 times, is not counted), code/direct, the ratio of the times, and
// empty-ms, a run_code call whose script only returns 1: the fixed cost of
// a script (transpiling it, a fresh engine, the pipeline).
func BenchmarkCodeMode(b *testing.B) {
	w := cmWorkspace(b)
	ctx := context.Background()
	e := w.Engine
	direct := func() (calls, bytes int) {
		counts := map[string]int{}
		for i := range cmFiles {
			path := fmt.Sprintf("src/f%02d.txt", i)
			out := e.Call(ctx, &tool.Call{Name: "read_file", Arguments: json.RawMessage(`{"path":"` + path + `"}`)})
			if err := out.Err(); err != nil {
				b.Fatal(err)
			}
			text := out.Result.Text()
			calls, bytes = calls+1, bytes+len(text)
			counts[path] = strings.Count(text, "TODO")
		}
		paths := make([]string, 0, len(counts))
		for p := range counts {
			paths = append(paths, p)
		}
		sort.Slice(paths, func(i, j int) bool { return counts[paths[i]] > counts[paths[j]] })
		if paths[0] != "src/f19.txt" || counts[paths[0]] != 57 {
			b.Fatalf("direct: top = %s (%d), want src/f19.txt (57)", paths[0], counts[paths[0]])
		}
		return calls, bytes
	}
	args, _ := json.Marshal(map[string]string{"code": cmScript})
	argsAll, _ := json.Marshal(map[string]string{"code": cmScriptAll})
	run := func(args json.RawMessage) (calls, bytes int) {
		out := e.Call(ctx, &tool.Call{Name: codemode.Name, Arguments: args})
		if err := out.Err(); err != nil {
			b.Fatal(err)
		}
		text := out.Result.Text()
		if strings.TrimSpace(text) != cmTop3 {
			b.Fatalf("run_code answered %q, want %s", text, cmTop3)
		}
		return 1, len(text)
	}
	empty, _ := json.Marshal(map[string]string{"code": "return 1"})
	code := func() (calls, bytes int) { return run(args) }
	var dT, cT, aT, eT time.Duration
	var dCalls, dBytes, cCalls, cBytes int
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		dCalls, dBytes = direct()
		dT += time.Since(start)
		start = time.Now()
		cCalls, cBytes = code()
		cT += time.Since(start)
		start = time.Now()
		run(argsAll)
		aT += time.Since(start)
		start = time.Now()
		if out := e.Call(ctx, &tool.Call{Name: codemode.Name, Arguments: empty}); out.Err() != nil {
			b.Fatal(out.Err())
		}
		eT += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(dCalls), "direct-calls")
	b.ReportMetric(float64(cCalls), "code-calls")
	b.ReportMetric(float64(dBytes), "direct-bytes")
	b.ReportMetric(float64(cBytes), "code-bytes")
	b.ReportMetric(dT.Seconds()*1000/n, "direct-ms")
	b.ReportMetric(cT.Seconds()*1000/n, "code-ms")
	b.ReportMetric(aT.Seconds()*1000/n, "code-all-ms")
	b.ReportMetric(eT.Seconds()*1000/n, "empty-ms")
	b.ReportMetric(float64(cT)/float64(dT), "code/direct")
}

// BenchmarkCodeModeWaiting measures what running a script's calls at once
// is for: a tool that waits (5 ms, as a network or process tool waits on
// something else) called 8 times by one script, one call after another
// (seq-ms), and all started together with Promise.all (all-ms), which
// run_code runs 4 at a time. all/seq is the ratio of the wall times; the
// floor of the waiting alone is 40 ms one after another, 10 ms four at a
// time.
func BenchmarkCodeModeWaiting(b *testing.B) {
	w := cmWorkspace(b)
	type in struct{}
	wait := builtin.Must(builtin.Func(tool.Definition{Name: "wait", Annotations: tool.Annotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ in) (string, error) {
			select {
			case <-time.After(5 * time.Millisecond):
				return "waited", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}))
	if err := w.Engine.Register(wait); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	run := func(code string) {
		args, _ := json.Marshal(map[string]string{"code": code})
		out := w.Engine.Call(ctx, &tool.Call{Name: codemode.Name, Arguments: args})
		if err := out.Err(); err != nil {
			b.Fatal(err)
		}
		if got := strings.TrimSpace(out.Result.Text()); got != "8" {
			b.Fatalf("run_code answered %q, want 8", got)
		}
	}
	const seq = `let n = 0; for (let i = 0; i < 8; i++) { await tools.wait({}); n++; } return n;`
	const all = `const r = await Promise.all(Array.from({length: 8}, () => tools.wait({}))); return r.length;`
	var sT, aT time.Duration
	for b.Loop() {
		start := time.Now()
		run(seq)
		sT += time.Since(start)
		start = time.Now()
		run(all)
		aT += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(sT.Seconds()*1000/n, "seq-ms")
	b.ReportMetric(aT.Seconds()*1000/n, "all-ms")
	b.ReportMetric(float64(aT)/float64(sT), "all/seq")
}

package load

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/runtimetest"
	"github.com/lathe-tools/lathe/tool"
)

// nodeSuite holds the conformance suite's tools as node tools.
var nodeSuite = map[string]string{
	runtimetest.Echo: `execute(args) { return { content: [{ type: "text", text: args.text }], structured: { text: args.text } }; }`,
	runtimetest.Fail: `execute(args) { throw new Error("failed: " + args.message); }`,
	// Its process id means nothing outside its sandbox; the marker says
	// only that it started.
	runtimetest.Sleep: `async execute(args, ctx) {
    ctx.fs.writeFile(args.marker, "started\n", { append: true });
    await new Promise(() => setInterval(() => {}, 1000));
  }`,
	runtimetest.Crash: `execute(args) { process.stderr.write(args.message + "\n", () => process.exit(3)); return new Promise(() => {}); }`,
	runtimetest.Huge:  `execute(args) { return "x".repeat(args.size); }`,
	runtimetest.Ask: `execute(args, ctx) {
    const yes = ctx.ask({ id: "confirm", text: "Go on with " + args.subject + "?", type: "boolean" });
    if (!yes) throw new Error("declined " + args.subject);
    return "confirmed " + args.subject;
  }`,
}

// TestConformanceNode runs the conformance suite against node tools: each
// a packaged tool of runtime "node", built and run as the loader does.
func TestConformanceNode(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	// The suite's markers are made in the temporary directory, which the
	// tools write through the host: it is their workspace. The cache lies
	// outside it, as lathe requires.
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, cache := filepath.Join(base, "ws"), filepath.Join(base, "cache")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", root)
	runtimetest.Run(t, func(t *testing.T, name string) tool.Tool {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var schema json.RawMessage
		for _, s := range runtimetest.Specs() {
			if s.Name == name {
				schema = s.InputSchema
			}
		}
		m, _ := json.Marshal(map[string]any{"name": name, "description": name, "runtime": "node", "entry": "index.js", "inputSchema": schema})
		os.WriteFile(filepath.Join(dir, ManifestFile), m, 0o644)
		os.WriteFile(filepath.Join(dir, "index.js"), []byte("module.exports.default = {\n  "+nodeSuite[name]+"\n};\n"), 0o644)
		f, err := readManifest(dir, filepath.Join(dir, ManifestFile))
		if err != nil {
			t.Fatal(err)
		}
		b, err := buildJS(f, root, cache)
		if err != nil {
			t.Fatal(err)
		}
		l := &localLoader{ctx: context.Background(), cfg: &config.Config{}, ws: root}
		tl, err := l.nodeTool(b, cache, config.HostPermissions{Write: []string{root + "/**"}}, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			for _, h := range l.hosts {
				h.Close()
			}
		})
		return tl
	})
}

package transpile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

const tool = `import { shout } from "./lib/shout.ts";
interface Args { text: string }
export default {
  description: "shouts",
  inputSchema: { type: "object" },
  execute(args: Args) { return shout(args.text); },
};
`

// runNode evaluates the bundle in node, when there is one, to check that
// the global holds the default export.
func runNode(t *testing.T, code []byte, expr string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node to evaluate the bundle with")
	}
	out, err := exec.Command(node, "-e", string(code)+"\n;process.stdout.write(String("+expr+"))").CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	return string(out)
}

func TestBuildBundlesRelativeImports(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "shout.ts"), tool)
	write(t, filepath.Join(dir, "lib", "shout.ts"), `export const shout = (s: string): string => s.toUpperCase() + "!";`)
	r, err := Build(filepath.Join(dir, "shout.ts"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Inputs) != 2 || !strings.HasSuffix(r.Inputs[1].Path, "lib/shout.ts") {
		t.Fatalf("inputs = %v", r.Inputs)
	}
	if !strings.Contains(string(r.SourceMap), "shout.ts") {
		t.Errorf("the source map names no .ts file: %.200s", r.SourceMap)
	}
	if got := runNode(t, r.Code, GlobalName+`.default.execute({text: "hi"})`); got != "HI!" {
		t.Errorf("execute returned %q, want HI!", got)
	}
}

func TestBuildRefusesNodeBuiltinsAndPackages(t *testing.T) {
	for _, imp := range []string{`import fs from "fs";`, `import x from "left-pad";`, `const c = require("child_process");`, `import p from "/etc/passwd";`} {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "t.js"), "// a tool\n"+imp+"\nexport default { execute() { return 1 } };\n")
		_, err := Build(filepath.Join(dir, "t.js"), Options{})
		if err == nil {
			t.Errorf("%s: built", imp)
			continue
		}
		if !strings.Contains(err.Error(), "t.js:2:") || !strings.Contains(err.Error(), "cannot import") {
			t.Errorf("%s: the error names no file:line: %v", imp, err)
		}
	}
}

func TestBuildErrorNamesLineAndColumn(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "bad.ts"), "export default {\n  execute( { return 1 }\n};\n")
	_, err := Build(filepath.Join(dir, "bad.ts"), Options{})
	if err == nil || !strings.Contains(err.Error(), "bad.ts:2:") {
		t.Fatalf("err = %v, want one naming bad.ts:2:", err)
	}
}

// A tool file that is a link to a file elsewhere is refused, not followed:
// the person trusts the file in the tools directory, not whatever it names.
func TestBuildRefusesSymlinkedToolFile(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	write(t, filepath.Join(elsewhere, "evil.js"), "export default { execute() { return 1 } };")
	if err := os.Symlink(filepath.Join(elsewhere, "evil.js"), filepath.Join(dir, "t.js")); err != nil {
		t.Fatal(err)
	}
	_, err := Build(filepath.Join(dir, "t.js"), Options{})
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("err = %v, want a refused link", err)
	}
}

// An import that resolves outside the tool's root (through ../ or a link)
// is refused: only files under the root are part of the tool.
func TestBuildRefusesImportsOutsideRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "tools")
	write(t, filepath.Join(base, "secret.js"), "export const s = 1;")
	write(t, filepath.Join(root, "up.js"), `import {s} from "../secret.js"; export default { execute() { return s } };`)
	if _, err := Build(filepath.Join(root, "up.js"), Options{}); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("../ import: err = %v, want outside", err)
	}
	if err := os.Symlink(filepath.Join(base, "secret.js"), filepath.Join(root, "link.js")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "via.js"), `import {s} from "./link.js"; export default { execute() { return s } };`)
	if _, err := Build(filepath.Join(root, "via.js"), Options{}); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("linked import: err = %v, want outside", err)
	}
}

func TestBuildRefusesFilesOthersMayWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "t.js")
	write(t, p, "export default { execute() { return 1 } };")
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(p, Options{}); err == nil || !strings.Contains(err.Error(), "other users") {
		t.Errorf("err = %v, want one about other users", err)
	}
}

// A file another user planted in the user's tools directory runs as this
// user if lathe reads it: it is refused.
func TestBuildRefusesAnotherUsersFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "t.js")
	write(t, p, "export default { execute() { return 1 } };")
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(p, Options{}); err == nil || !strings.Contains(err.Error(), "belongs to user 65534") {
		t.Errorf("err = %v, want one naming the other user", err)
	}
}

func TestCacheHitAndInvalidation(t *testing.T) {
	dir, cache := t.TempDir(), filepath.Join(t.TempDir(), "js")
	write(t, filepath.Join(dir, "shout.ts"), tool)
	lib := filepath.Join(dir, "lib", "shout.ts")
	write(t, lib, `export const shout = (s: string): string => s + "!";`)
	opts := Options{CacheDir: cache}
	r1, err := Build(filepath.Join(dir, "shout.ts"), opts)
	if err != nil || r1.Cached {
		t.Fatalf("first build: cached=%v err=%v", r1 != nil && r1.Cached, err)
	}
	r2, err := Build(filepath.Join(dir, "shout.ts"), opts)
	if err != nil || !r2.Cached || string(r2.Code) != string(r1.Code) || r2.Sum() != r1.Sum() {
		t.Fatalf("second build: cached=%v err=%v", r2 != nil && r2.Cached, err)
	}
	// A changed import is a miss, and the new bytes are what is built.
	write(t, lib, `export const shout = (s: string): string => s + "?";`)
	r3, err := Build(filepath.Join(dir, "shout.ts"), opts)
	if err != nil || r3.Cached || !strings.Contains(string(r3.Code), `"?"`) || r3.Sum() == r1.Sum() {
		t.Fatalf("after a changed import: cached=%v err=%v", r3 != nil && r3.Cached, err)
	}
}

// A cache in the workspace is refused, and so is one another user may
// write: what it holds runs as lathe.
func TestCacheDirChecks(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "t.js"), "export default { execute() { return 1 } };")
	if _, err := Build(filepath.Join(ws, "t.js"), Options{CacheDir: filepath.Join(ws, ".cache"), Workspace: ws}); err == nil {
		t.Error("a cache in the workspace was used")
	}
	open := filepath.Join(t.TempDir(), "js")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	if _, err := Build(filepath.Join(ws, "t.js"), Options{CacheDir: open}); err == nil {
		t.Error("a cache others may write was used")
	}
}

// A cache record someone else could have written is not used: its code
// would run as lathe. The record is rewritten with other code and made
// writable by others; the next build must come from esbuild.
func TestCachePoisonedRecordIsAMiss(t *testing.T) {
	dir, cache := t.TempDir(), filepath.Join(t.TempDir(), "js")
	write(t, filepath.Join(dir, "t.js"), `export default { execute() { return "honest" } };`)
	if _, err := Build(filepath.Join(dir, "t.js"), Options{CacheDir: cache}); err != nil {
		t.Fatal(err)
	}
	recs, _ := filepath.Glob(filepath.Join(cache, "*.json"))
	if len(recs) != 1 {
		t.Fatalf("records: %v", recs)
	}
	b, err := os.ReadFile(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	poisoned := strings.ReplaceAll(string(b), "honest", "poison")
	if err := os.WriteFile(recs[0], []byte(poisoned), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(recs[0], 0o666); err != nil {
		t.Fatal(err)
	}
	r, err := Build(filepath.Join(dir, "t.js"), Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if r.Cached || strings.Contains(string(r.Code), "poison") {
		t.Fatalf("the poisoned record was used (cached %v)", r.Cached)
	}
	// The same bytes in a private record are used: the check above is
	// what refused it.
	if err := os.Chmod(recs[0], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(recs[0], []byte(poisoned), 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := Build(filepath.Join(dir, "t.js"), Options{CacheDir: cache}); err != nil || !r.Cached {
		t.Fatalf("a private record was not used: %v", err)
	}
}

package codemode_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/codemode"
	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/tool"
)

// script runs code through run_code in w, as a person typed it, and fails
// the test if it does not end within 20 seconds.
func script(t *testing.T, w *load.Workspace, code string) *tool.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(policy.WithPerson(context.Background(), "test"), 20*time.Second)
	defer cancel()
	args, _ := json.Marshal(map[string]string{"code": code})
	out := w.Engine.Call(ctx, &tool.Call{ID: "c1", Name: codemode.Name, Arguments: args})
	if ctx.Err() != nil {
		t.Fatalf("run_code did not end within 20s: it hung on\n%s", code)
	}
	return out
}

// value decodes the JSON value on the first line of a run_code result.
func value(t *testing.T, out *tool.Outcome, v any) {
	t.Helper()
	if err := out.Err(); err != nil {
		t.Fatalf("run_code failed: %v", err)
	}
	first, _, _ := strings.Cut(out.Result.Text(), "\n")
	if err := json.Unmarshal([]byte(first), v); err != nil {
		t.Fatalf("run_code's value %q: %v", first, err)
	}
}

func rule(tool, approval string) string {
	return "[[policy.rules]]\ntool = \"" + tool + "\"\napproval = \"" + approval + "\"\n"
}

// TestScriptDeniedTool: in JavaScript, a denied call rejects its promise
// with an Error whose message names the kind; the script catches it and
// goes on. Under an allow rule the same script writes the file.
func TestScriptDeniedTool(t *testing.T) {
	const code = `
let caught = "";
try { await tools.write_file({path: "out.txt", content: "pwned"}); } catch (e) { caught = e.message; }
const text: string = await tools.read_file({path: "a.txt"});
return {caught, text};`
	for _, approval := range []string{"deny", "allow"} {
		t.Run(approval, func(t *testing.T) {
			w := open(t, map[string]string{"a.txt": "hello\n", "lathe.toml": rule("write_file", approval)}, codemode.Options{}, nil, nil)
			var got struct{ Caught, Text string }
			value(t, script(t, w, code), &got)
			_, err := os.Stat(filepath.Join(w.Dir, "out.txt"))
			if written := err == nil; written != (approval == "allow") {
				t.Fatalf("out.txt written = %v under %s (caught %q)", written, approval, got.Caught)
			}
			if approval == "deny" && !strings.HasPrefix(got.Caught, "denied: ") {
				t.Errorf("the script caught %q, want a denial", got.Caught)
			}
			if !strings.Contains(got.Text, "hello") {
				t.Errorf("the script did not go on: %+v", got)
			}
		})
	}
}

// TestScriptPrototypeTampering: what a script does to the tools object and
// to prototypes cannot reach a tool by another name, a tool not
// registered, or run_code: each function calls its own tool, and only
// through the policy. The control (write_file allowed) shows that the
// write_file function reached by another way does write, so it is the
// deny rule, seen by the policy under the tool's true name, that stops it.
func TestScriptPrototypeTampering(t *testing.T) {
	const code = `
const read = tools.read_file;
tools.read_file = tools.write_file;
let swapped = "";
try { await tools.read_file({path: "out.txt", content: "pwned"}); swapped = "ran"; } catch (e) { swapped = e.message; }
const write = Object.getOwnPropertyDescriptor(tools, "write_file").value;
let borrowedWrite = "";
try { await write.apply(read, [{path: "out.txt", content: "pwned"}]); borrowedWrite = "ran"; } catch (e) { borrowedWrite = e.message; }
Object.prototype.grep = tools.write_file;
Object.defineProperty(Object.prototype, "run_code", {value: read, configurable: true});
Function.prototype.call = function () { return "hijacked"; };
const borrowed = await read.apply({name: "write_file"}, [{path: "a.txt"}]);
let recursive = "";
try { await tools.run_code({code: "return 1"}); recursive = "ran"; } catch (e) { recursive = e.message; }
return {swapped, borrowedWrite, borrowed, recursive, grep: Object.keys(tools).includes("grep")};`
	for _, approval := range []string{"deny", "allow"} {
		t.Run(approval, func(t *testing.T) {
			w := open(t, map[string]string{"a.txt": "hello\n",
				"lathe.toml": rule("write_file", approval) + "[tools.grep]\nenable = false\n"}, codemode.Options{}, nil, nil)
			var got struct {
				Swapped, BorrowedWrite, Borrowed, Recursive string
				Grep                                        bool
			}
			value(t, script(t, w, code), &got)
			_, err := os.Stat(filepath.Join(w.Dir, "out.txt"))
			if written := err == nil; written != (approval == "allow") {
				t.Fatalf("out.txt written = %v under %s: %+v", written, approval, got)
			}
			// tools is frozen: the assignment changed nothing, and the
			// call went to read_file, which refused write_file's arguments.
			if !strings.Contains(got.Swapped, "read_file") {
				t.Errorf("tools.read_file after the swap: %q, want read_file's own error", got.Swapped)
			}
			if approval == "deny" && !strings.HasPrefix(got.BorrowedWrite, "denied: write_file") {
				t.Errorf("write_file with another this: %q, want write_file denied", got.BorrowedWrite)
			}
			if !strings.Contains(got.Borrowed, "hello") {
				t.Errorf("read_file called with another this = %q, want the file", got.Borrowed)
			}
			// tools.run_code finds the planted read_file through the
			// prototype: the call is read_file's, never run_code's (the
			// records below hold no nested run_code).
			if got.Recursive == "ran" || !strings.Contains(got.Recursive, "read_file") {
				t.Errorf("run_code through Object.prototype: %q, want read_file's refusal", got.Recursive)
			}
			if got.Grep {
				t.Error("a disabled tool is among the script's tools")
			}
			for _, r := range records(t, w) {
				switch r.Tool {
				case codemode.Name:
					if r.Parent != 0 {
						t.Errorf("a run_code record with a parent: %+v", r)
					}
				case "read_file", "write_file":
				default:
					t.Errorf("a script reached %s", r.Tool)
				}
			}
		})
	}
}

// TestScriptRecursion: a script has no run_code function.
func TestScriptRecursion(t *testing.T) {
	w := open(t, nil, codemode.Options{}, nil, nil)
	var got string
	value(t, script(t, w, `try { await tools.run_code({code: "return 1"}); return "ran"; } catch (e) { return e.name + ": " + e.message; }`), &got)
	if !strings.HasPrefix(got, "TypeError") {
		t.Errorf("tools.run_code(...) = %q, want a TypeError (no such function)", got)
	}
	for _, r := range records(t, w) {
		if r.Parent != 0 {
			t.Errorf("a nested call was made: %+v", r)
		}
	}
}

// TestScriptBombs: a memory bomb and an endless loop end the run_code call
// with a clear error; lathe goes on and the next script runs.
func TestScriptBombs(t *testing.T) {
	w := open(t, nil, codemode.Options{}, nil, nil)
	out := script(t, w, `return "x".repeat(2 ** 28).length`)
	if out.Err() == nil || !strings.Contains(out.Result.Text(), "memory") {
		t.Errorf("memory bomb: %q, want an out-of-memory failure", out.Result.Text())
	}
	// A short timeout of its own for the loop; the memory bomb above had
	// the default, so that a loaded machine cannot turn it into a timeout.
	rc := codemode.New(w.Engine, codemode.Options{})
	rc.Timeout = 2 * time.Second
	if err := w.Engine.Replace([]string{codemode.Name}, rc); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out = script(t, w, `while (true) {}`)
	if out.Err() == nil || out.Result.ErrorKind != tool.KindTimeout {
		t.Errorf("endless loop: %+v, want a timeout", out.Result)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the endless loop ran %v past a 2s timeout", d)
	}
	var n int
	value(t, script(t, w, `return 6 * 7`), &n)
	if n != 42 {
		t.Errorf("after the bombs: %d", n)
	}
}

// TestScriptOutputCap: console output and the value are cut at the limit,
// and the result says so.
func TestScriptOutputCap(t *testing.T) {
	const limit = 4096
	w := open(t, nil, codemode.Options{}, nil, nil)
	if err := w.Engine.Replace([]string{codemode.Name}, codemode.New(w.Engine, codemode.Options{MaxOutput: limit})); err != nil {
		t.Fatal(err)
	}
	out := script(t, w, `for (let i = 0; i < 10000; i++) console.log("line " + i); return "x".repeat(3000);`)
	text := out.Result.Text()
	if out.Err() != nil {
		t.Fatalf("run_code failed: %v", out.Err())
	}
	if len(text) > limit+512 {
		t.Errorf("result is %d bytes, over the limit of %d", len(text), limit)
	}
	if !strings.Contains(text, "cut") || !strings.Contains(text, "line 0\n") {
		t.Errorf("result does not say what was cut: %q", text)
	}
	out = script(t, w, `return "y".repeat(10000);`)
	if text := out.Result.Text(); len(text) > limit+512 || !strings.Contains(text, "cut") {
		t.Errorf("a large value: %d bytes, %q…", len(text), text[:min(len(text), 80)])
	}
}

// TestScriptSyntaxError: a script that does not parse is refused before
// anything runs, naming its line.
func TestScriptSyntaxError(t *testing.T) {
	w := open(t, nil, codemode.Options{}, nil, nil)
	out := script(t, w, "const a = 1;\nlet x: number = ;")
	if out.Result.ErrorKind != tool.KindInvalidArguments || !strings.Contains(out.Result.Text(), "/code: line 2 column 17") {
		t.Errorf("syntax error: %+v", out.Result)
	}
}

// TestScriptErrorLine: a JavaScript script that throws is reported with the
// script's own line.
func TestScriptErrorLine(t *testing.T) {
	w := open(t, nil, codemode.Options{}, nil, nil)
	args, _ := json.Marshal(map[string]string{"language": "javascript", "code": "// A comment,\n// and another.\n\n\nconst a = 1;\n\nnull.boom;"})
	ctx, cancel := context.WithTimeout(policy.WithPerson(context.Background(), "test"), 20*time.Second)
	defer cancel()
	out := w.Engine.Call(ctx, &tool.Call{Name: codemode.Name, Arguments: args})
	if out.Err() == nil || !strings.Contains(out.Result.Text(), ":7:") {
		t.Errorf("a throw on line 7: %q, want the line named", out.Result.Text())
	}
}

// TestScriptErrorLineTypeScript: a TypeScript script loses its types and
// its lines move when it is transpiled; an error it throws still names the
// script's own line, through the source map.
func TestScriptErrorLineTypeScript(t *testing.T) {
	w := open(t, nil, codemode.Options{}, nil, nil)
	code := "interface Point {\n  x: number;\n  y: number;\n}\ntype Pair = [Point, Point];\n\nconst p: Point = {x: 1, y: 2};\n\nconst q = null as unknown as Point;\nconsole.log(q.x);"
	args, _ := json.Marshal(map[string]string{"language": "typescript", "code": code})
	ctx, cancel := context.WithTimeout(policy.WithPerson(context.Background(), "test"), 20*time.Second)
	defer cancel()
	out := w.Engine.Call(ctx, &tool.Call{Name: codemode.Name, Arguments: args})
	if out.Err() == nil || !strings.Contains(out.Result.Text(), "script:10:") {
		t.Errorf("a throw on line 10 of a TypeScript script: %q, want script:10 named", out.Result.Text())
	}
}

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/tool"
)

// With this argument the test binary is the example tool itself, so the
// test runs the binary's real main through lathe.
const serveArg = "serve-as-tool"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == serveArg {
		main()
	}
	// See runtime/process's tests: a -race binary otherwise sleeps a
	// second before exiting.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}

// TestThroughLathe registers every tool the binary describes, as
// [toolsets.NAME] does, and calls each.
func TestThroughLathe(t *testing.T) {
	root := t.TempDir()
	cmd := process.Command{Argv: []string{os.Args[0], serveArg}, Dir: root, Env: []string{"GORACE"}}
	schemas, err := process.Describe(context.Background(), cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := lathe.New(lathe.Options{})
	defer e.Close()
	for _, s := range schemas {
		rt, err := process.New(cmd, process.Options{Tool: s.Name})
		if err != nil {
			t.Fatal(err)
		}
		err = e.Register(tool.Tool{Runtime: rt, Definition: tool.Definition{Name: s.Name, Summary: s.Summary,
			Description: s.Description, InputSchema: s.Parameters, OutputSchema: s.OutputSchema,
			Annotations: s.Annotations, Source: "local", Runtime: process.RuntimeName}})
		if err != nil {
			t.Fatal(err)
		}
	}
	call := func(name, args string, answers map[string]any) *tool.Outcome {
		return e.Call(context.Background(), &tool.Call{Name: name, Arguments: json.RawMessage(args), Answers: answers})
	}

	out := call("word_count", `{"text":"one two\nthree"}`, nil)
	if got := string(out.Result.Structured); got != `{"words":3,"lines":1,"bytes":13}` {
		t.Errorf("word_count: %s (%s)", got, out.Result.Text())
	}
	// The engine fills in the default separator from the binary's schema.
	if got := call("slugify", `{"text":"Hello, World!"}`, nil).Result.Text(); got != "hello-world" {
		t.Errorf("slugify: %q", got)
	}
	if got := call("slugify", `{"text":"Hello","separator":"+"}`, nil).Result.ErrorKind; got != tool.KindInvalidArguments {
		t.Errorf("slugify with a separator outside the enum: kind %q", got)
	}

	os.WriteFile(filepath.Join(root, "old.txt"), []byte("x"), 0o644)
	q := call("delete_file", `{"path":"old.txt"}`, nil).Question
	if q == nil || q.ID != "confirm" {
		t.Fatalf("delete_file did not ask: %+v", q)
	}
	if got := call("delete_file", `{"path":"old.txt"}`, map[string]any{"confirm": true}).Result.Text(); got != "deleted old.txt" {
		t.Errorf("delete_file: %q", got)
	}
	if _, err := os.Stat(filepath.Join(root, "old.txt")); err == nil {
		t.Error("old.txt is still there")
	}
	out = call("delete_file", `{"path":"../outside"}`, map[string]any{"confirm": true})
	if !out.Result.IsError {
		t.Errorf("delete_file outside the workspace: %q", out.Result.Text())
	}
}

package tools_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

func TestDescribeTools(t *testing.T) {
	e := newEngine(t, t.TempDir(), tools.Options{})
	got := ok(t, e, "describe_tools", map[string]any{"names": []string{"edit_file", "nope", "read_file", "edit_file", "other"}})
	contains(t, got,
		"# edit_file\n", "# read_file\n",
		"must occur exactly once", // from the description, not the summary
		"input schema:", `"old_string"`, `"minLength": 1`, `"default": 1`,
		`title "Edit file"`, "may overwrite or delete; not idempotent; closed world",
		`title "Read file"; read-only; closed world`,
		"source: builtin",
		"unknown tools: nope, other",
	)
	if strings.Count(got, "# edit_file") != 1 {
		t.Error("a name asked for twice is described twice")
	}
	if strings.Index(got, "# edit_file") > strings.Index(got, "# read_file") {
		t.Error("tools are not described in the order asked")
	}

	// Tools of other sources, with an output schema, are described too.
	type sum struct {
		Total int `json:"total"`
	}
	if err := e.Register(mustTool(t, tool.Definition{Name: "add", Summary: "Add."}, sum{})); err != nil {
		t.Fatal(err)
	}
	contains(t, ok(t, e, "describe_tools", map[string]any{"names": []string{"add"}}),
		"# add\nAdd.\n", "output schema:", `"total"`, "may overwrite or delete", "open world")

	contains(t, fail(t, e, "describe_tools", map[string]any{"names": []string{}}, tool.KindInvalidArguments), "/names")
}

func mustTool(t *testing.T, def tool.Definition, out any) tool.Tool {
	t.Helper()
	s, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{"total": map[string]any{"type": "integer"}}})
	def.OutputSchema = s
	def.Source = "local"
	return tool.Tool{Definition: def, Runtime: tool.RuntimeFunc(nil)}
}

// TestDefinitions checks what every model sees of the set: names, one-line
// summaries, and annotations that tell the truth.
func TestDefinitions(t *testing.T) {
	e := newEngine(t, t.TempDir(), tools.Options{})
	want := []string{"describe_tools", "edit_file", "glob", "grep", "list_dir", "read_file", "write_file"}
	var names []string
	for _, d := range e.Tools() {
		names = append(names, d.Name)
		if d.Summary == "" || strings.Contains(d.Summary, "\n") || len(d.Summary) > 80 {
			t.Errorf("%s: summary is not one short line: %q", d.Name, d.Summary)
		}
		if len(d.Description) <= len(d.Summary) {
			t.Errorf("%s: description says no more than the summary", d.Name)
		}
		if d.Source != "builtin" || d.Runtime != "builtin" {
			t.Errorf("%s: source %q, runtime %q", d.Name, d.Source, d.Runtime)
		}
		a := d.Annotations
		if a.Title == "" || a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s: annotations %+v: want a title and a closed world", d.Name, a)
		}
		var readOnly, destructive, idempotent = true, false, true
		switch d.Name {
		case "write_file":
			readOnly, destructive, idempotent = false, true, true
		case "edit_file":
			readOnly, destructive, idempotent = false, true, false
		}
		if a.ReadOnlyHint != readOnly || a.DestructiveHint == nil || *a.DestructiveHint != destructive || a.IdempotentHint != idempotent {
			t.Errorf("%s: annotations %+v, want read-only %v, destructive %v, idempotent %v",
				d.Name, a, readOnly, destructive, idempotent)
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}

	// Without a registry to describe, describe_tools is left out.
	ts, err := tools.Standard(t.TempDir(), tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range ts {
		if tl.Definition.Name == "describe_tools" {
			t.Error("describe_tools is in a set without Describe")
		}
	}
	if err := lathe.New(lathe.Options{}).Register(ts...); err != nil {
		t.Error(err)
	}
}

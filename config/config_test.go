package config

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/tool"
)

func dump(c *Config) string {
	b, _ := json.MarshalIndent(c, "", "  ")
	return string(b)
}

func mustParse(t *testing.T, name, in string) *Config {
	t.Helper()
	c, err := Parse(name, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMerge(t *testing.T) {
	user := mustParse(t, "user.toml", lines(
		`[defaults]`,
		`timeout = "60s"`,
		`max_output_bytes = 1000`,
		`[tools.read_file]`,
		`timeout = "5s"`,
		`enable = false`,
		`summary = "user summary"`,
		`[tools.only_user]`,
		`summary = "u"`,
	))
	ws := mustParse(t, "lathe.toml", lines(
		`[defaults]`,
		`max_output_bytes = 2000`,
		``,
		`[tools.read_file]`,
		`summary = "workspace summary"`,
		`enable = true`,
		`[tools.only_ws]`,
		`description = "w"`,
	))
	cfg := &Config{}
	cfg.Merge(user)
	cfg.Merge(ws)
	want := &Config{
		Defaults: Defaults{Timeout: 60 * time.Second, MaxOutputBytes: 2000},
		Tools: map[string]*Tool{
			"read_file": {
				Name:    "read_file",
				Enable:  new(true),
				Timeout: 5 * time.Second, // from the user file: the workspace did not set it
				Summary: "workspace summary",
				Pos:     Pos{"lathe.toml", 4},
			},
			"only_user": {Name: "only_user", Summary: "u", Pos: Pos{"user.toml", 8}},
			"only_ws":   {Name: "only_ws", Description: "w", Pos: Pos{"lathe.toml", 7}},
		},
		Files: []string{"user.toml", "lathe.toml"},
	}
	if !reflect.DeepEqual(withoutOrigins(cfg), want) {
		t.Errorf("merged:\n got %s\nwant %s", dump(cfg), dump(want))
	}

	// The result shares nothing with its inputs.
	*ws.Tools["read_file"].Enable = false
	ws.Tools["read_file"].Summary = "changed"
	ws.Tools["new"] = &Tool{}
	*user.Tools["read_file"].Enable = true
	user.Files[0] = "changed"
	if !reflect.DeepEqual(withoutOrigins(cfg), want) {
		t.Errorf("changing the inputs changed the merge:\n got %s\nwant %s", dump(cfg), dump(want))
	}
}

func TestMergeNil(t *testing.T) {
	c := mustParse(t, "a", "[tools.x]\nsummary = \"s\"\n")
	before := dump(c)
	c.Merge(nil)
	c.Merge(&Config{})
	if got := dump(c); got != before {
		t.Errorf("merging nothing changed the config:\n got %s\nwant %s", got, before)
	}
}

func TestApply(t *testing.T) {
	cfg := mustParse(t, "lathe.toml", lines(
		`[tools.read_file]`,
		`summary = "Read"`,
		`description = "Read a file."`,
		`timeout = "3s"`,
		`[tools.run]`,
		`enable = false`,
		`[tools.grep]`,
		`enable = true`,
	))
	newTool := func(name string) *tool.Tool {
		return &tool.Tool{
			Definition: tool.Definition{Name: name, Summary: "orig", Description: "orig desc"},
			Timeout:    time.Minute,
		}
	}
	tests := []struct {
		name    string
		enabled bool
		want    *tool.Tool
	}{
		{"read_file", true, &tool.Tool{
			Definition: tool.Definition{Name: "read_file", Summary: "Read", Description: "Read a file."},
			Timeout:    3 * time.Second,
		}},
		{"run", false, newTool("run")},
		{"grep", true, newTool("grep")},
		{"other", true, newTool("other")},
	}
	for _, tt := range tests {
		tl := newTool(tt.name)
		if got := cfg.Apply(tl); got != tt.enabled {
			t.Errorf("Apply(%s) = %v, want %v", tt.name, got, tt.enabled)
		}
		if !reflect.DeepEqual(tl, tt.want) {
			t.Errorf("Apply(%s): tool = %+v, want %+v", tt.name, tl, tt.want)
		}
	}

	var none *Config
	tl := newTool("read_file")
	if !none.Apply(tl) || !reflect.DeepEqual(tl, newTool("read_file")) {
		t.Errorf("a nil config changed or disabled a tool")
	}
}

// What a server says of its tools counts only where it narrows, unless the
// server is trusted for it; a [tools.NAME] effect overrides both, for any
// tool.
func TestApplyEffects(t *testing.T) {
	cfg := mustParse(t, "lathe.toml", lines(
		`[mcp.liar]`,
		`command = ["liar"]`,
		`[mcp.honest]`,
		`command = ["honest"]`,
		`trust_annotations = true`,
		`[tools.liar__fixed]`,
		`read_only = true`,
		`idempotent = true`,
		`[tools.honest__wrong]`,
		`read_only = false`,
		`destructive = true`,
		`[tools.read_file]`,
		`read_only = false`,
		`open_world = true`,
	))
	claims := tool.Annotations{Title: "T", ReadOnlyHint: true, DestructiveHint: tool.Bool(false),
		IdempotentHint: true, OpenWorldHint: tool.Bool(false)}
	dangerous := tool.Annotations{Title: "T", DestructiveHint: tool.Bool(true), OpenWorldHint: tool.Bool(true)}
	for _, tc := range []struct {
		name, source string
		claims, want tool.Annotations
	}{
		{"liar__environ", "mcp.liar", claims, tool.Annotations{Title: "T"}},
		{"liar__rm", "mcp.liar", dangerous, dangerous},
		{"liar__fixed", "mcp.liar", claims, tool.Annotations{Title: "T", ReadOnlyHint: true, IdempotentHint: true}},
		{"honest__environ", "mcp.honest", claims, claims},
		{"honest__wrong", "mcp.honest", claims, tool.Annotations{Title: "T", DestructiveHint: tool.Bool(true),
			IdempotentHint: true, OpenWorldHint: tool.Bool(false)}},
		// A server no table names (one registered some other way) is not trusted.
		{"gone__environ", "mcp.gone", claims, tool.Annotations{Title: "T"}},
		// A tool of lathe's own is taken at its word, unless overridden.
		{"list_dir", "builtin", claims, claims},
		{"read_file", "builtin", claims, tool.Annotations{Title: "T", DestructiveHint: tool.Bool(false),
			IdempotentHint: true, OpenWorldHint: tool.Bool(true)}},
	} {
		tl := &tool.Tool{Definition: tool.Definition{Name: tc.name, Source: tc.source, Annotations: tc.claims}}
		cfg.Apply(tl)
		if !reflect.DeepEqual(tl.Definition.Annotations, tc.want) {
			t.Errorf("%s: annotations %+v, want %+v", tc.name, tl.Definition.Annotations, tc.want)
		}
	}
}

func TestUnused(t *testing.T) {
	user := mustParse(t, "user.toml", lines(
		`[tools.zzz_typo]`,
		`[tools.read_file]`,
	))
	ws := mustParse(t, "lathe.toml", lines(
		`[tools.read_file]`,
		`summary = "s"`,
		``,
		`[tools.raed_file]`,
		`timeout = "1s"`,
		`[tools.grep]`,
	))
	cfg := &Config{}
	cfg.Merge(user)
	cfg.Merge(ws)
	known := func(name string) bool { return name == "read_file" || name == "grep" }

	err := cfg.Unused(known)
	want := strings.Join([]string{
		`user.toml:1: [tools.zzz_typo] no tool is named "zzz_typo"`,
		`lathe.toml:4: [tools.raed_file] no tool is named "raed_file"`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Fatalf("Unused:\n got %v\nwant %s", err, want)
	}
	var ce *Error
	if !errors.As(err, &ce) || ce.Pos != (Pos{"user.toml", 1}) {
		t.Errorf("errors.As: %+v", ce)
	}

	if err := cfg.Unused(func(string) bool { return true }); err != nil {
		t.Errorf("Unused with every name known: %v", err)
	}
	var none *Config
	if err := none.Unused(known); err != nil {
		t.Errorf("nil config: Unused = %v", err)
	}
	one := mustParse(t, "f", "[tools.x]\n")
	if err := one.Unused(known); err == nil || err.Error() != `f:1: [tools.x] no tool is named "x"` {
		t.Errorf("one unused tool: %v", err)
	}
}

func TestPosString(t *testing.T) {
	for _, tt := range []struct {
		p    Pos
		want string
	}{
		{Pos{"lathe.toml", 7}, "lathe.toml:7"},
		{Pos{"lathe.toml", 0}, "lathe.toml"},
		{Pos{}, ""},
	} {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.p, got, tt.want)
		}
	}
}

package config

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/tool"
)

func TestLocalTool(t *testing.T) {
	cfg, err := Parse("lathe.toml", []byte(`
[tools.git_log]
command = ["git", "log", "-n", "{count}", "--", "{path}"]
env = ["GIT_DIR"]
options = { depth = 3, tags = ["a", "b"], nested = { on = true } }

[tools.git_log.parameters.count]
type = "integer"
default = 10
enum = [5, 10, 20]

[tools.git_log.parameters.path]
type = "string"
required = true
description = "Only commits touching this path"

[tools.git_log.parameters.opts]
type = "object"
properties.mode = { type = "string", required = true }
properties.list = { type = "array", items = { type = "number" } }

[toolsets.text]
command = ["./bin/text"]
prefix = "text_"
timeout = "5s"
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.CheckLocal(); err != nil {
		t.Fatal(err)
	}
	g := cfg.Tools["git_log"]
	if !g.IsLocal() || g.Options["depth"] != int64(3) || g.Parameters["count"].Default != int64(10) {
		t.Errorf("git_log = %+v", g)
	}
	got := string(ParamsSchema(g.Parameters))
	want := `{"additionalProperties":false,"properties":{` +
		`"count":{"default":10,"enum":[5,10,20],"type":"integer"},` +
		`"opts":{"additionalProperties":false,"properties":{"list":{"items":{"type":"number"},"type":"array"},"mode":{"type":"string"}},"required":["mode"],"type":"object"},` +
		`"path":{"description":"Only commits touching this path","type":"string"}},` +
		`"required":["path"],"type":"object"}`
	if got != want {
		t.Errorf("schema:\n%s\nwant\n%s", got, want)
	}
	sets := cfg.EnabledToolsets()
	if len(sets) != 1 || sets[0].Name != "text" || sets[0].Prefix != "text_" {
		t.Errorf("toolsets = %+v", sets)
	}
}

func TestLocalErrors(t *testing.T) {
	_, err := Parse("lathe.toml", []byte(`
[tools.a]
command = ["x"]
parameters.p = { type = "strin" }
options = { when = 1979-05-27 }
`))
	for _, want := range []string{
		`lathe.toml:4: tools.a.parameters.p.type: must be one of string`,
		`lathe.toml:5: tools.a.options.when: dates and times have no JSON form`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to hold %q", err, want)
		}
	}

	cfg, err := Parse("lathe.toml", []byte(`
[tools.b]
shell = true

[tools.c]
command = ["x"]
env = ["A=1"]

[tools.c.parameters.p]
type = "string"
items = { type = "string" }
enum = []

[toolsets.s]
prefix = "1x"
`))
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.CheckLocal()
	for _, want := range []string{
		"lathe.toml:2: [tools.b] shell = true needs a command",
		`lathe.toml:5: [tools.c] env: "A=1" is not a variable name`,
		`lathe.toml:9: [tools.c.parameters.p] items describes the elements of an array, but type is "string"`,
		"lathe.toml:9: [tools.c.parameters.p] enum is empty",
		"lathe.toml:14: [toolsets.s] command is missing",
		`lathe.toml:14: [toolsets.s] invalid prefix "1x"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to hold %q", err, want)
		}
	}
}

func TestOverride(t *testing.T) {
	own := json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","description":"own"},"b":{"type":"integer"}},"required":["a"]}`)
	cfg, err := Parse("lathe.toml", []byte(`
[tools.t.parameters.a]
description = "mine"
[tools.t.parameters.b]
required = true
enum = [1, 2]
`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Override(own, cfg.Tools["t"].Parameters, "t")
	want := `{"properties":{"a":{"description":"mine","type":"string"},"b":{"enum":[1,2],"type":"integer"}},"required":["a","b"],"type":"object"}`
	if err != nil || string(got) != want {
		t.Errorf("Override = %s, %v\nwant %s", got, err, want)
	}

	cfg, _ = Parse("lathe.toml", []byte(`
[tools.t.parameters.a]
required = false
[tools.t.parameters.zzz]
type = "string"
`))
	_, err = Override(own, cfg.Tools["t"].Parameters, "t")
	for _, want := range []string{
		`lathe.toml:2: [tools.t.parameters.a] required = false: the tool requires "a"`,
		`lathe.toml:4: [tools.t.parameters.zzz] the tool has no parameter "zzz"; it has: [a b]`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to hold %q", err, want)
		}
	}
}

func TestDescriptionPlaceholder(t *testing.T) {
	cfg, _ := Parse("lathe.toml", []byte(`
[tools.t]
description = "{description} Only for docs/."
`))
	tl := tool.Tool{Definition: tool.Definition{Name: "t", Description: "Reads files."}}
	cfg.Apply(&tl)
	if got := tl.Definition.Description; got != "Reads files. Only for docs/." {
		t.Errorf("description = %q", got)
	}
}

func TestMergeLocal(t *testing.T) {
	user, _ := Parse("user.toml", []byte(`
[tools.t]
command = ["x"]
options = { a = { deep = 1 } }
parameters.p = { type = "string", description = "user" }
`))
	ws, _ := Parse("lathe.toml", []byte(`
[tools.t.parameters.p]
required = true
`))
	cfg := &Config{}
	cfg.Merge(user)
	cfg.Merge(ws)
	p := cfg.Tools["t"].Parameters["p"]
	if p.Type != "string" || p.Description != "user" || p.Required == nil || !*p.Required {
		t.Errorf("merged parameter = %+v", p)
	}
	// The merged config shares nothing with the files' configs.
	cfg.Tools["t"].Options["a"].(map[string]any)["deep"] = 2
	if user.Tools["t"].Options["a"].(map[string]any)["deep"] != int64(1) {
		t.Error("Merge kept a reference into the user file's options")
	}
}

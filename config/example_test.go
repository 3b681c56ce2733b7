package config_test

import (
	"fmt"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/tool"
)

func ExampleParse() {
	cfg, err := config.Parse("lathe.toml", []byte(`
[defaults]
timeout = "60s"

[tools.read_file]
summary = "Read a file from the workspace"
timeout = "10s"

[tools.run_command]
enable = false
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Defaults.Timeout, cfg.Tools["read_file"].Pos)

	t := &tool.Tool{Definition: tool.Definition{Name: "read_file", Summary: "Read a file"}}
	enabled := cfg.Apply(t)
	fmt.Println(enabled, t.Definition.Summary, t.Timeout)
	fmt.Println(cfg.Apply(&tool.Tool{Definition: tool.Definition{Name: "run_command"}}))
	// Output:
	// 1m0s lathe.toml:5
	// true Read a file from the workspace 10s
	// false
}

func ExampleParse_errors() {
	_, err := config.Parse("lathe.toml", []byte(`[defaults]
timeout = "5 parsecs"

[tools.read_file]
timout = "5s"
enable = "yes"
`))
	fmt.Println(err)
	// Output:
	// lathe.toml:2: defaults.timeout: invalid duration "5 parsecs"
	// lathe.toml:5: [tools.read_file] unknown key "timout" (did you mean "timeout"?)
	// lathe.toml:6: tools.read_file.enable: expected true or false, got string "yes"
}

func ExampleConfig_Merge() {
	user, _ := config.Parse("config.toml", []byte(`
[tools.read_file]
timeout = "30s"
summary = "Read"
`))
	workspace, _ := config.Parse("lathe.toml", []byte(`
[tools.read_file]
summary = "Read a workspace file"
`))
	user.Merge(workspace)
	t := user.Tools["read_file"]
	fmt.Println(t.Timeout, t.Summary, t.Pos, user.Files)
	// Output:
	// 30s Read a workspace file lathe.toml:2 [config.toml lathe.toml]
}

func ExampleConfig_Unused() {
	cfg, _ := config.Parse("lathe.toml", []byte(`
[tools.raed_file]
enable = false
`))
	known := map[string]bool{"read_file": true}
	fmt.Println(cfg.Unused(func(name string) bool { return known[name] }))
	// Output:
	// lathe.toml:2: [tools.raed_file] no tool is named "raed_file"
}

// What an upstream server says of its tools counts only where it makes a
// tool look more dangerous, unless its table trusts it; a [tools.NAME]
// table says what one tool does, whatever the server says.
func ExampleConfig_Apply_annotations() {
	cfg, err := config.Parse("lathe.toml", []byte(`
[mcp.up]
command = ["up-server"]

[tools.up__status]
read_only = true
`))
	if err != nil {
		panic(err)
	}
	for _, name := range []string{"up__environ", "up__status"} {
		t := &tool.Tool{Definition: tool.Definition{Name: name, Source: "mcp.up",
			Annotations: tool.Annotations{ReadOnlyHint: true, DestructiveHint: tool.Bool(false)}}}
		cfg.Apply(t)
		fmt.Printf("%s: read-only %v\n", name, t.Definition.Annotations.ReadOnlyHint)
	}
	// Output:
	// up__environ: read-only false
	// up__status: read-only true
}

package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/tool"
)

// timeoutOf and profileOf follow the engine's order for each kind of tool:
// the [tools.NAME] key, then the toolset's or server's, then [defaults] or
// [sandbox], then lathe's own; each answer names the place that set it.
func TestTimeoutAndProfileOf(t *testing.T) {
	cfg, err := config.Parse("lathe.toml", []byte(strings.Join([]string{
		`[defaults]`,                       // 1
		`timeout = "2m"`,                   // 2
		`[toolsets.kit]`,                   // 3
		`command = ["kit"]`,                // 4
		`prefix = "kit_"`,                  // 5
		`timeout = "20s"`,                  // 6
		`profile = "hardened"`,             // 7
		`[toolsets.other]`,                 // 8
		`command = ["other"]`,              // 9
		`[mcp.gh]`,                         // 10
		`command = ["gh-mcp"]`,             // 11
		`timeout = "45s"`,                  // 12
		`[mcp.web]`,                        // 13
		`url = "https://example.invalid/"`, // 14
		`[tools.kit_fast]`,                 // 15
		`timeout = "1s"`,                   // 16
		`profile = "dev"`,                  // 17
		`[tools.run_command]`,              // 18
		`profile = "dev"`,                  // 19
		``,
	}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		def                  tool.Definition
		timeout              time.Duration
		timeoutFrom          string
		profile, profileFrom string
		isolation            string
	}{
		{tool.Definition{Name: "kit_slow", Source: "local"}, 20 * time.Second, "lathe.toml:6 toolsets.kit.timeout",
			"hardened", "lathe.toml:7 toolsets.kit.profile", "sandbox"},
		{tool.Definition{Name: "kit_fast", Source: "local"}, time.Second, "lathe.toml:16 tools.kit_fast.timeout",
			"dev", "lathe.toml:17 tools.kit_fast.profile", "sandbox"},
		// Of the toolsets only other, with no prefix, can have described
		// lint, and it sets no timeout or profile of its own.
		{tool.Definition{Name: "lint", Source: "local"}, 2 * time.Minute, "lathe.toml:2 defaults.timeout",
			"", "default", "host process"},
		{tool.Definition{Name: "gh__issues", Source: "mcp.gh"}, 45 * time.Second, "lathe.toml:12 mcp.gh.timeout",
			"", "default", "host process"},
		{tool.Definition{Name: "web__get", Source: "mcp.web"}, 2 * time.Minute, "lathe.toml:2 defaults.timeout",
			"", "default", "remote"},
		{tool.Definition{Name: "run_command", Source: "builtin"}, 2 * time.Minute, "lathe.toml:2 defaults.timeout",
			"dev", "lathe.toml:19 tools.run_command.profile", "sandbox"},
		{tool.Definition{Name: "read_file", Source: "builtin"}, 2 * time.Minute, "lathe.toml:2 defaults.timeout",
			"", "default", "in process"},
	} {
		d, from := timeoutOf(cfg, tc.def)
		if d != tc.timeout || from != tc.timeoutFrom {
			t.Errorf("%s: timeout %v (%s), want %v (%s)", tc.def.Name, d, from, tc.timeout, tc.timeoutFrom)
		}
		p, pf, iso := profileOf(cfg, tc.def)
		if p != tc.profile || pf != tc.profileFrom || !strings.HasPrefix(iso, tc.isolation) {
			t.Errorf("%s: profile %q (%s, %s), want %q (%s, %s…)", tc.def.Name, p, pf, iso, tc.profile, tc.profileFrom, tc.isolation)
		}
	}

	// With nothing configured: lathe's own timeout, and run_command under
	// the standard profile.
	empty := &config.Config{}
	if d, from := timeoutOf(empty, tool.Definition{Name: "read_file", Source: "builtin"}); d != time.Minute || from != "default" {
		t.Errorf("empty: timeout %v (%s)", d, from)
	}
	if p, from, _ := profileOf(empty, tool.Definition{Name: "run_command", Source: "builtin"}); p != "standard" || from != "default" {
		t.Errorf("empty: run_command profile %q (%s)", p, from)
	}
	// A VFS tool is never shown as a host process: with no profile of its
	// own it runs under standard, even where [sandbox] says dev.
	devCfg := &config.Config{Sandbox: config.Sandbox{Profile: "dev"}}
	if p, from, iso := profileOf(devCfg, tool.Definition{Name: "v", Source: "local", Runtime: "vfs"}); p != "standard" || from != "default" || iso != "sandbox" {
		t.Errorf("a VFS tool under [sandbox] dev: profile %q (%s, %s), want standard", p, from, iso)
	}
	// A WASM tool is never shown as a process, whatever profile is set.
	wasmCfg := &config.Config{Sandbox: config.Sandbox{Profile: "dev"}, Tools: map[string]*config.Tool{"w": {Profile: "standard"}}}
	if p, _, iso := profileOf(wasmCfg, tool.Definition{Name: "w", Source: "local", Runtime: "wasm"}); p != "" || !strings.HasPrefix(iso, "wasm: runs inside lathe") {
		t.Errorf("a WASM tool: profile %q (%s), want no profile and a WASM instance", p, iso)
	}
}

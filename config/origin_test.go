package config

import (
	"bytes"
	"reflect"
	"testing"
)

// withoutOrigins returns a copy of c without the places of its values, for
// tests that compare values alone (origin_test.go tests the places).
func withoutOrigins(c *Config) *Config {
	d := *c
	d.origins = nil
	return &d
}

// settingsOf returns the settings of c keyed by name, each as its value and
// place.
func settingsOf(c *Config) map[string]Setting {
	out := map[string]Setting{}
	for _, s := range c.Settings() {
		out[s.Name()] = s
	}
	return out
}

func TestOriginMerge(t *testing.T) {
	user := mustParse(t, "user.toml", lines(
		`[tools.read_file]`,
		`timeout = "5s"`,
		`summary = "user summary"`,
	))
	ws := mustParse(t, "lathe.toml", lines(
		`[defaults]`,
		`max_output_bytes = 2000`,
		``,
		`[tools.read_file]`,
		`summary = "workspace summary"`,
	))
	cfg := &Config{}
	cfg.Merge(user)
	cfg.Merge(ws)
	for _, tc := range []struct {
		path []string
		want Pos
	}{
		{[]string{"tools", "read_file", "timeout"}, Pos{"user.toml", 2}},
		{[]string{"tools", "read_file", "summary"}, Pos{"lathe.toml", 5}},
		{[]string{"defaults", "max_output_bytes"}, Pos{"lathe.toml", 2}},
	} {
		if got, ok := cfg.Origin(tc.path...); !ok || got != tc.want {
			t.Errorf("Origin(%v) = %v, %v; want %v", tc.path, got, ok, tc.want)
		}
	}
	// A value no file set has no origin: the default applies.
	if got, ok := cfg.Origin("defaults", "timeout"); ok {
		t.Errorf("Origin(defaults.timeout) = %v, want none", got)
	}
	// A table is not a value.
	if got, ok := cfg.Origin("tools", "read_file"); ok {
		t.Errorf("Origin(tools.read_file) = %v, want none", got)
	}
	// The merge shares no origins with its inputs: a later merge into an
	// input does not move the places of the merged values.
	user.Merge(ws)
	if got, _ := cfg.Origin("tools", "read_file", "timeout"); got != (Pos{"user.toml", 2}) {
		t.Errorf("after merging into an input, Origin(timeout) = %v", got)
	}
}

// A file that is not trusted has what it would widen left out, and its
// place must not be claimed for the value that applies instead: a person
// reading `lathe config` would believe the workspace's profile is in force.
func TestOriginUntrustedLeftOut(t *testing.T) {
	user := &Source{Name: "user.toml", User: true, Config: mustParse(t, "user.toml", lines(
		`[sandbox]`,
		`profile = "standard"`,
		`[[policy.rules]]`,
		`tool = "run_command"`,
		`approval = "ask"`,
	))}
	ws := &Source{Name: "lathe.toml", Config: mustParse(t, "lathe.toml", lines(
		`[sandbox]`,
		`profile = "dev"`,
		`[tools.grep]`,
		`summary = "Search."`,
		`command = ["sh", "grep.sh"]`,
		`[tools.glob]`,
		`summary = "Find."`,
		`[[policy.rules]]`,
		`tool = "write_file"`,
		`approval = "deny"`,
	))}
	for _, trusted := range []bool{false, true} {
		cfg, pending, err := Decide([]*Source{user, ws}, func(*Source) (bool, error) { return trusted, nil })
		if err != nil {
			t.Fatal(err)
		}
		if (len(pending) > 0) == trusted {
			t.Fatalf("trusted=%v: pending = %v", trusted, pending)
		}
		want := map[string]struct {
			value any
			pos   Pos
		}{
			"sandbox.profile":         {"dev", Pos{"lathe.toml", 2}},
			"tools.grep.summary":      {"Search.", Pos{"lathe.toml", 4}},
			"tools.grep.command":      {[]any{"sh", "grep.sh"}, Pos{"lathe.toml", 5}},
			"tools.glob.summary":      {"Find.", Pos{"lathe.toml", 7}},
			"policy.rules.0.tool":     {"write_file", Pos{"lathe.toml", 8}},
			"policy.rules.0.approval": {"deny", Pos{"lathe.toml", 8}},
		}
		if !trusted {
			// The profile is the user's; the local tool is left out whole;
			// the narrowing summary and the deny rule apply, the rule
			// after the user's.
			want["sandbox.profile"] = struct {
				value any
				pos   Pos
			}{"standard", Pos{"user.toml", 2}}
			delete(want, "tools.grep.summary")
			delete(want, "tools.grep.command")
			want["policy.rules.0.tool"] = struct {
				value any
				pos   Pos
			}{"run_command", Pos{"user.toml", 3}}
			want["policy.rules.1.tool"] = struct {
				value any
				pos   Pos
			}{"write_file", Pos{"lathe.toml", 8}}
			delete(want, "policy.rules.0.approval")
		}
		got := settingsOf(cfg)
		for name, w := range want {
			s, ok := got[name]
			if !ok {
				t.Errorf("trusted=%v: %s is not among the settings", trusted, name)
				continue
			}
			if !reflect.DeepEqual(s.Value, w.value) || s.Pos != w.pos {
				t.Errorf("trusted=%v: %s = %#v at %v, want %#v at %v", trusted, name, s.Value, s.Pos, w.value, w.pos)
			}
		}
		if !trusted {
			for _, name := range []string{"tools.grep.summary", "tools.grep.command"} {
				if s, ok := got[name]; ok {
					t.Errorf("untrusted: %s is shown (%v at %v), but it was left out", name, s.Value, s.Pos)
				}
			}
		}
	}
}

// Every kind of value a file can set is a setting, with its own line.
func TestSettingsKinds(t *testing.T) {
	cfg := mustParse(t, "lathe.toml", lines(
		`[defaults]`,
		`timeout = "90s"`,
		`[tools.lint]`,
		`command = ["sh", "lint.sh", "{path}"]`,
		`enable = false`,
		`options = { level = 3, tags = ["a"] }`,
		`[tools.lint.parameters.path]`,
		`description = "A file."`,
		`[mcp.gh]`,
		`url = "https://example.invalid/mcp"`,
		`prefix = ""`,
		`headers = { Authorization = "Bearer ${TOKEN}" }`,
		`[sandbox.limits]`,
		`cpus = 1.5`,
	))
	want := map[string]Setting{
		"defaults.timeout":                       {Value: "1m30s", Pos: Pos{"lathe.toml", 2}},
		"tools.lint.command":                     {Value: []any{"sh", "lint.sh", "{path}"}, Pos: Pos{"lathe.toml", 4}},
		"tools.lint.enable":                      {Value: false, Pos: Pos{"lathe.toml", 5}},
		"tools.lint.options.level":               {Value: int64(3), Pos: Pos{"lathe.toml", 6}},
		"tools.lint.options.tags":                {Value: []any{"a"}, Pos: Pos{"lathe.toml", 6}},
		"tools.lint.parameters.path.description": {Value: "A file.", Pos: Pos{"lathe.toml", 8}},
		"mcp.gh.url":                             {Value: "https://example.invalid/mcp", Pos: Pos{"lathe.toml", 10}},
		"mcp.gh.prefix":                          {Value: "", Pos: Pos{"lathe.toml", 11}},
		"mcp.gh.headers.Authorization":           {Value: "Bearer ${TOKEN}", Pos: Pos{"lathe.toml", 12}},
		"sandbox.limits.cpus":                    {Value: 1.5, Pos: Pos{"lathe.toml", 14}},
	}
	got := settingsOf(cfg)
	for name, w := range want {
		s, ok := got[name]
		if !ok || !reflect.DeepEqual(s.Value, w.Value) || s.Pos != w.Pos {
			t.Errorf("%s = %#v at %v (found %v), want %#v at %v", name, s.Value, s.Pos, ok, w.Value, w.Pos)
		}
	}
	if len(got) != len(want) {
		for name, s := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("unexpected setting %s = %#v", name, s.Value)
			}
		}
	}
}

// A later file that sets a pointer key to its zero value (enable = false,
// prefix = "") overrides an earlier file that set it otherwise: the
// workspace that turns a tool off must not be overruled by the user file's
// enable = true, and the place shown must be that of the value in force.
func TestMergeZeroPointer(t *testing.T) {
	user := mustParse(t, "user.toml", lines(
		`[tools.run_command]`,
		`enable = true`,
		`[mcp.gh]`,
		`url = "https://example.invalid/mcp"`,
		`prefix = "gh_"`,
		`[audit]`,
		`enable = true`,
	))
	ws := mustParse(t, "lathe.toml", lines(
		`[tools.run_command]`,
		`enable = false`,
		`[mcp.gh]`,
		`prefix = ""`,
		`[audit]`,
		`enable = false`,
	))
	cfg := &Config{}
	cfg.Merge(user)
	cfg.Merge(ws)
	if e := cfg.Tools["run_command"].Enable; e == nil || *e {
		t.Errorf("tools.run_command.enable = %v, want false from the workspace", e)
	}
	if p := cfg.MCP["gh"].Prefix; p == nil || *p != "" {
		t.Errorf("mcp.gh.prefix = %v, want \"\" from the workspace", p)
	}
	if e := cfg.Audit.Enable; e == nil || *e {
		t.Errorf("audit.enable = %v, want false from the workspace", e)
	}
	if got, _ := cfg.Origin("tools", "run_command", "enable"); got != (Pos{"lathe.toml", 2}) {
		t.Errorf("Origin(tools.run_command.enable) = %v, want lathe.toml:2", got)
	}
	// The user's value is untouched.
	if e := user.Tools["run_command"].Enable; !*e {
		t.Error("merging changed the user file's value")
	}
}

// The settings of [sandbox] and [audit] that need trust are each placed at
// their own line, so that a person can find them.
func TestSplitPlacesKeys(t *testing.T) {
	c := mustParse(t, "lathe.toml", lines(
		`[sandbox]`,
		`profile = "dev"`,
		`[sandbox.limits]`,
		`wall_time = "10m"`,
		`[audit]`,
		`path = "/tmp/elsewhere.db"`,
	))
	_, ws := c.Split()
	want := map[string]int{"sandbox.profile": 2, "sandbox.limits.wall_time": 4, "audit.path": 6}
	for _, w := range ws {
		if line, ok := want[w.Key]; ok && w.Pos != (Pos{"lathe.toml", line}) {
			t.Errorf("%s placed at %v, want lathe.toml:%d", w.Key, w.Pos, line)
		}
		delete(want, w.Key)
	}
	if len(want) > 0 {
		t.Errorf("not listed: %v", want)
	}
}

// FuzzSettings checks, for every file Parse accepts, that each value is
// placed on a line of the file, that Origin agrees with Settings, that a
// merge keeps every place, and that what Split keeps keeps its place.
func FuzzSettings(f *testing.F) {
	for _, s := range []string{
		"[defaults]\ntimeout = \"60s\"\nmax_output_bytes = 1024\n",
		"tools = { a = { enable = true, summary = \"s\" }, \"b c\" = {} }\n",
		"[tools.a]\ncommand = [\"x\", \"{y}\"]\noptions = { k = [1, {a = 2}] }\n[tools.a.parameters.y]\ntype = \"string\"\n",
		"[mcp.s]\nurl = \"http://x\"\nheaders = { A = \"b\" }\nprefix = \"\"\n[sandbox.permissions]\nread = [\"/a\"]\n",
		"[[policy.rules]]\ntool = \"a\"\napproval = \"deny\"\n[[policy.rules]]\ntool = \"b*\"\nargs = \"x *\"\napproval = \"allow\"\n",
		"sandbox.limits.cpus = 0.5\naudit.enable = false\n",
	} {
		f.Add([]byte(s))
	}
	const name = "lathe.toml"
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(name, data)
		if err != nil {
			return
		}
		lastLine := bytes.Count(data, []byte("\n")) + 1
		settings := cfg.Settings()
		for _, s := range settings {
			if s.Pos.File != name || s.Pos.Line < 1 || s.Pos.Line > lastLine {
				t.Errorf("%s placed at %v (the file has %d lines)", s.Name(), s.Pos, lastLine)
			}
			if s.Key[0] == "policy" {
				continue
			}
			if p, ok := cfg.Origin(s.Key...); !ok || p != s.Pos {
				t.Errorf("Origin(%s) = %v, %v; Settings says %v", s.Name(), p, ok, s.Pos)
			}
		}
		merged := &Config{}
		merged.Merge(cfg)
		if got := merged.Settings(); !reflect.DeepEqual(got, settings) {
			t.Errorf("a merge changed the settings:\n got %v\nwant %v", got, settings)
		}
		n, _ := cfg.Split()
		all := settingsOf(cfg)
		for _, s := range n.Settings() {
			if w, ok := all[s.Name()]; !ok || w.Pos != s.Pos || !reflect.DeepEqual(w.Value, s.Value) {
				t.Errorf("Split kept %s = %v at %v; the file has %v at %v", s.Name(), s.Value, s.Pos, w.Value, w.Pos)
			}
		}
	})
}

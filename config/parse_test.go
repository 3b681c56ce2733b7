package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// lines joins its arguments into a file, one per line, so that a test can
// count lines at a glance.
func lines(l ...string) string { return strings.Join(l, "\n") + "\n" }

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // the whole error message
	}{
		// TOML syntax and TOML's own rules, as go-toml reports them.
		{"unterminated string", lines(
			`[tools.read_file]`,
			`summary = 'x`,
		), `lathe.toml:2: literal strings cannot have new lines`},
		{"missing equals", lines(
			`[defaults]`,
			``,
			`timeout "5s"`,
		), `lathe.toml:3: expected '=' after key`},
		{"incomplete array at end", `x = [1,`, `lathe.toml:1: array is incomplete`},
		{"key defined twice", lines(
			`[defaults]`,
			`timeout = "1s"`,
			`timeout = "2s"`,
		), `lathe.toml:3: key timeout is already defined`},
		{"table defined twice", lines(
			`[tools.a]`,
			`summary = "x"`,
			`[tools.a]`,
		), `lathe.toml:3: table a already exists`},

		// Unknown keys, anywhere.
		{"unknown key in tool", lines(
			`[defaults]`,
			`timeout = "60s"`,
			``,
			`[tools.read_file]`,
			`summary = "Read a file"`,
			``,
			`timout = "5s"`,
		), `lathe.toml:7: [tools.read_file] unknown key "timout" (did you mean "timeout"?)`},
		{"unknown key without suggestion", lines(
			`[tools.read_file]`,
			`color = "red"`,
		), `lathe.toml:2: [tools.read_file] unknown key "color"`},
		{"unknown key in defaults", lines(
			`[defaults]`,
			`max_output = 5`,
		), `lathe.toml:2: [defaults] unknown key "max_output" (did you mean "max_output_bytes"?)`},
		{"unknown top-level table", lines(
			`# comment`,
			`[tool.read_file]`,
			`enable = false`,
		), `lathe.toml:2: unknown key "tool" (did you mean "tools"?)`},
		{"unknown top-level key", lines(
			``,
			`verbose = true`,
		), `lathe.toml:2: unknown key "verbose"`},
		{"unknown sub-table of a tool", lines(
			`[tools.a]`,
			`enable = true`,
			`[tools.a.extra]`,
			`x = 1`,
		), `lathe.toml:3: [tools.a] unknown key "extra"`},
		{"unknown key in inline table", lines(
			`tools = { a = { enable = true,`,
			`  enabel = false } }`,
		), `lathe.toml:2: [tools.a] unknown key "enabel" (did you mean "enable"?)`},
		{"unknown dotted key", lines(
			`tools.a.enable = true`,
			`tools.a.sumary = "x"`,
		), `lathe.toml:2: [tools.a] unknown key "sumary" (did you mean "summary"?)`},
		{"unknown quoted key", lines(
			`[tools.a]`,
			`"time out" = "1s"`,
		), `lathe.toml:2: [tools.a] unknown key "time out" (did you mean "timeout"?)`},

		// Wrong types.
		{"duration as integer", lines(
			`[defaults]`,
			`timeout = 5`,
		), `lathe.toml:2: defaults.timeout: expected a duration string such as "30s", got integer 5`},
		{"enable as string", lines(
			`[tools.read_file]`,
			`summary = "x"`,
			`enable = "yes"`,
		), `lathe.toml:3: tools.read_file.enable: expected true or false, got string "yes"`},
		{"summary as integer", lines(
			`[tools.a]`,
			`summary = 5`,
		), `lathe.toml:2: tools.a.summary: expected a string, got integer 5`},
		{"size as float", lines(
			`[defaults]`,
			`max_output_bytes = 1.5`,
		), `lathe.toml:2: defaults.max_output_bytes: expected an integer, got float 1.5`},
		{"size as string", lines(
			`defaults.max_output_bytes = "1MB"`,
		), `lathe.toml:1: defaults.max_output_bytes: expected an integer, got string "1MB"`},
		{"tools as value", lines(
			`tools = 5`,
		), `lathe.toml:1: tools: expected a table, got integer 5`},
		{"tool as value", lines(
			`[tools]`,
			`read_file = true`,
		), `lathe.toml:2: tools.read_file: expected a table, got boolean true`},
		{"tool as array of tables", lines(
			`[[tools.a]]`,
			`enable = true`,
		), `lathe.toml:1: tools.a: expected a table, got an array`},
		{"defaults as array", lines(
			`defaults = []`,
		), `lathe.toml:1: defaults: expected a table, got an array`},
		{"description as date", lines(
			`[tools.a]`,
			`description = 1979-05-27`,
		), `lathe.toml:2: tools.a.description: expected a string, got a date or time`},
		{"long string is cut", lines(
			`[tools.a]`,
			`enable = "`+strings.Repeat("é", 30)+`"`,
		), `lathe.toml:2: tools.a.enable: expected true or false, got string "` + strings.Repeat("é", 20) + `"…`},

		// Bad values.
		{"invalid duration", lines(
			`# defaults`,
			`[defaults]`,
			`timeout = "5 parsecs"`,
		), `lathe.toml:3: defaults.timeout: invalid duration "5 parsecs"`},
		{"duration without unit", lines(
			`[tools.a]`,
			`timeout = "30"`,
		), `lathe.toml:2: tools.a.timeout: invalid duration "30": missing unit, as in "30s"`},
		{"negative duration", lines(
			`[tools.a]`,
			`timeout = "-5s"`,
		), `lathe.toml:2: tools.a.timeout: must not be negative, got "-5s"`},
		{"negative size", lines(
			`[defaults]`,
			`max_output_bytes = -1`,
		), `lathe.toml:2: defaults.max_output_bytes: must not be negative, got -1`},
		{"integer too large for TOML", lines(
			`[defaults]`,
			`max_output_bytes = 99999999999999999999`,
		), `lathe.toml:2: decimal number is too large to fit in a 64-bit signed integer`},
		{"invalid tool name", lines(
			`[tools.ok]`,
			`[tools."read file"]`,
			`enable = false`,
		), `lathe.toml:2: [tools."read file"] invalid tool name: it must match ^[A-Za-z][A-Za-z0-9_-]{0,63}$`},
		{"tool name starting with a digit", lines(
			``,
			`tools.1st.enable = false`,
		), `lathe.toml:2: [tools.1st] invalid tool name: it must match ^[A-Za-z][A-Za-z0-9_-]{0,63}$`},
		{"tool name too long", lines(
			`[tools.` + strings.Repeat("a", 65) + `]`,
		), `lathe.toml:1: [tools.` + strings.Repeat("a", 65) + `] invalid tool name: it must match ^[A-Za-z][A-Za-z0-9_-]{0,63}$`},

		// Several problems come out together, in the order of the file.
		{"all problems", lines(
			`[tools.b]`,
			`enable = "no"`,
			`[tools.a]`,
			`timout = "1s"`,
			`[defaults]`,
			`timeout = "soon"`,
			`max_output_bytes = -2`,
		), strings.Join([]string{
			`lathe.toml:2: tools.b.enable: expected true or false, got string "no"`,
			`lathe.toml:4: [tools.a] unknown key "timout" (did you mean "timeout"?)`,
			`lathe.toml:6: defaults.timeout: invalid duration "soon"`,
			`lathe.toml:7: defaults.max_output_bytes: must not be negative, got -2`,
		}, "\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("lathe.toml", []byte(tt.in))
			if err == nil {
				t.Fatalf("Parse succeeded with %+v; want error %q", cfg, tt.want)
			}
			if cfg != nil {
				t.Errorf("Parse returned a config with its error")
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error:\n got: %s\nwant: %s", got, tt.want)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("errors.As(%T, *Error) = false", err)
			} else if ce.Pos.File != "lathe.toml" || ce.Pos.Line < 1 {
				t.Errorf("Error.Pos = %+v", ce.Pos)
			}
		})
	}
}

func TestParse(t *testing.T) {
	in := lines(
		`# lathe.toml`,
		`tools.grep.summary = "Search"`,
		`[defaults]`,
		`timeout = "1m30s"`,
		`max_output_bytes = 65_536`,
		``,
		`[tools.read_file]`,
		`summary = "Read a file"`,
		`description = """`,
		`Read a UTF-8 file.`,
		`Returns its text."""`,
		``,
		`[tools.run_command]`,
		`enable = false`,
		`timeout = "2m"`,
		`[tools.empty]`,
	)
	got, err := Parse("ws/lathe.toml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Defaults: Defaults{Timeout: 90 * time.Second, MaxOutputBytes: 65536},
		Tools: map[string]*Tool{
			"read_file": {
				Name:        "read_file",
				Summary:     "Read a file",
				Description: "Read a UTF-8 file.\nReturns its text.",
				Pos:         Pos{"ws/lathe.toml", 7},
			},
			"run_command": {
				Name:    "run_command",
				Enable:  new(false),
				Timeout: 2 * time.Minute,
				Pos:     Pos{"ws/lathe.toml", 13},
			},
			// A table made by a dotted key is where the key is.
			"grep":  {Name: "grep", Summary: "Search", Pos: Pos{"ws/lathe.toml", 2}},
			"empty": {Name: "empty", Pos: Pos{"ws/lathe.toml", 16}},
		},
		Files: []string{"ws/lathe.toml"},
	}
	if !reflect.DeepEqual(withoutOrigins(got), want) {
		t.Errorf("Parse:\n got %s\nwant %s", dump(got), dump(want))
	}
}

func TestParseEmpty(t *testing.T) {
	for _, in := range []string{"", "\n", "# nothing\n", "[defaults]\n", "[tools]\n"} {
		cfg, err := Parse("x.toml", []byte(in))
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if cfg.Defaults != (Defaults{}) || len(cfg.Tools) != 0 || !reflect.DeepEqual(cfg.Files, []string{"x.toml"}) {
			t.Errorf("Parse(%q) = %s", in, dump(cfg))
		}
	}
}

// TestHeaderLineWins checks that a tool's position is its [tools.NAME]
// header even when a sub-table implied the tool's table first.
func TestHeaderLineWins(t *testing.T) {
	in := lines(
		`tools.a.enable = true`,
		`[tools.b]`,
		`[tools.c]`,
	)
	cfg, err := Parse("f", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	for name, line := range map[string]int{"a": 1, "b": 2, "c": 3} {
		if got := cfg.Tools[name].Pos; got != (Pos{"f", line}) {
			t.Errorf("tools.%s: Pos = %v, want f:%d", name, got, line)
		}
	}
}

func TestPositions(t *testing.T) {
	in := lines(
		`top = 1`,                // 1
		`arr = [`,                // 2
		`  "a",`,                 // 3
		`  { k = 1 },`,           // 4
		`]`,                      // 5
		`[[list]]`,               // 6
		`name = "one"`,           // 7
		`[[list]]`,               // 8
		`name = "two"`,           // 9
		`[list.sub]`,             // 10
		`deep = true`,            // 11
		`[t]`,                    // 12
		`"quoted.key" = 1`,       // 13
		`in = { a = { b = 2 } }`, // 14
		`[u.v]`,                  // 15
		`w.x = 3`,                // 16
		`[u]`,                    // 17
		`[[list.sub.more]]`,      // 18
		`[crlf]`+"\r\n"+`y = 1`,  // 19, 20
	)
	x, err := indexPositions([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{
		"top":                   1,
		"arr":                   2,
		"arr.0":                 3,
		"arr.1":                 4,
		"arr.1.k":               4,
		"list":                  6,
		"list.0":                6,
		"list.0.name":           7,
		"list.1":                8,
		"list.1.name":           9,
		"list.1.sub":            10,
		"list.1.sub.deep":       11,
		"t":                     12,
		"t.quoted.key":          13, // one key part, "quoted.key"
		"t.in.a.b":              14,
		"u":                     17, // the header, not the implied table
		"u.v":                   15,
		"u.v.w.x":               16,
		"list.1.sub.more.0":     18,
		"crlf":                  19,
		"crlf.y":                20,
		"list.1.name.no.such.k": 9, // nearest ancestor
		"nowhere":               1,
	} {
		parts := strings.Split(path, ".")
		if path == "t.quoted.key" {
			parts = []string{"t", "quoted.key"}
		}
		if got := x.lineOf(parts); got != want {
			t.Errorf("lineOf(%s) = %d, want %d", path, got, want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"timout", "timeout", 1}, {"enabel", "enable", 2}, {"abc", "", 3}, {"kitten", "sitting", 3},
	} {
		if got := distance(tt.a, tt.b); got != tt.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

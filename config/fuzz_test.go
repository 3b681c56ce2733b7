package config

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/tool"
)

// FuzzParse checks that Parse never panics, that every line of an error
// names the file and a line that exists, and that a config it accepts is
// sound.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		"[defaults]\ntimeout = \"60s\"\nmax_output_bytes = 1024\n",
		"[tools.read_file]\nenable = false\ntimeout = \"30s\"\nsummary = \"s\"\ndescription = '''\nd'''\n",
		"[tools.read_file]\ntimout = \"5s\"\n",
		"[defaults]\ntimeout = \"5 parsecs\"\n",
		"[defaults]\ntimeout = 5\n",
		"[tools.a]\nenable = \"yes\"\n",
		"tools = { a = { enable = true }, \"b c\" = {} }\n",
		"[[tools.a]]\n[[x]]\n[x.y]\nz = [1, {a = 2}, [3]]\n",
		"a = 1\na = 2\n",
		"[tools.a]\nsummary = 'x\n",
		"defaults.max_output_bytes = -1\r\n",
		"x = 1979-05-27T07:32:00Z\n",
	} {
		f.Add([]byte(s))
	}
	const name = "lathe.toml"
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(name, data)
		if err != nil {
			if cfg != nil {
				t.Errorf("Parse returned a config with its error")
			}
			lastLine := bytes.Count(data, []byte("\n")) + 1
			for _, l := range strings.Split(err.Error(), "\n") {
				rest, ok := strings.CutPrefix(l, name+":")
				num, _, ok2 := strings.Cut(rest, ": ")
				n, err := strconv.Atoi(num)
				if !ok || !ok2 || err != nil || n < 1 || n > lastLine {
					t.Fatalf("error line %q does not start with %s:LINE: (the file has %d lines)", l, name, lastLine)
				}
			}
			return
		}
		if len(cfg.Files) != 1 || cfg.Files[0] != name {
			t.Errorf("Files = %q", cfg.Files)
		}
		if cfg.Defaults.Timeout < 0 || cfg.Defaults.MaxOutputBytes < 0 {
			t.Errorf("negative default: %+v", cfg.Defaults)
		}
		for k, v := range cfg.Tools {
			if v.Name != k || !tool.ValidName(k) || v.Timeout < 0 || v.Pos.File != name || v.Pos.Line < 1 {
				t.Errorf("tool %q: %+v", k, v)
			}
		}
	})
}

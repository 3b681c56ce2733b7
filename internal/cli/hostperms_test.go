package cli

import (
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/tool"
)

func TestDescribeHost(t *testing.T) {
	cfg, err := config.Parse("lathe.toml", []byte(`
[tools.fmt]
command = ["./fmt"]
read = ["src/**"]
net = ["api.example.com"]
`))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	describeHost(&b, cfg, tool.Definition{Name: "fmt", Runtime: "vfs"},
		host.Permissions{Read: []string{"src/*.go"}, Write: []string{"out/"}, Net: []string{"api.example.com:443"}}, true)
	out := b.String()
	for _, want := range []string{
		"Host API, granted by [tools.fmt] (lathe.toml:2):",
		"  read   src/**\n",
		"  net    api.example.com\n",
		"declares: read src/*.go (granted)\n",
		`declares: write out/ (not granted: a person may add "out/" to write in [tools.fmt])`,
		"declares: net api.example.com:443 (granted)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("describe does not say %q:\n%s", want, out)
		}
	}
	b.Reset()
	describeHost(&b, cfg, tool.Definition{Name: "other", Runtime: "process"}, host.Permissions{}, false)
	if b.Len() != 0 {
		t.Errorf("a process tool that declares nothing gets a host section:\n%s", b.String())
	}
	b.Reset()
	describeHost(&b, cfg, tool.Definition{Name: "bare", Runtime: "wasm"}, host.Permissions{}, false)
	if !strings.Contains(b.String(), "nothing: every file") {
		t.Errorf("a confined tool granted nothing:\n%s", b.String())
	}
}

package config

import (
	"strings"
	"testing"
)

func TestMCPServers(t *testing.T) {
	cfg, err := Parse("lathe.toml", []byte(`
[mcp.fs]
command = ["srv", "${HOME_DIR}/data", "cost: $$5"]
env = { TOKEN = "${TOKEN}" }
allow = ["read_*"]
timeout = "5s"

[mcp.web]
url = "https://${HOST}/mcp"
headers = { Authorization = "Bearer ${TOKEN}" }
prefix = ""
optional = true

[mcp.off]
enable = false
`))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME_DIR": "/h", "TOKEN": "s3cret", "HOST": "mcp.example.invalid"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	servers, err := cfg.MCPServers(lookup)
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 2 || servers[0].Name != "fs" || servers[1].Name != "web" {
		t.Fatalf("servers %+v", servers)
	}
	fs, web := servers[0], servers[1]
	if strings.Join(fs.Command, "|") != "srv|/h/data|cost: $5" || fs.Env["TOKEN"] != "s3cret" || fs.Timeout.String() != "5s" {
		t.Errorf("fs %+v", fs)
	}
	if web.URL != "https://mcp.example.invalid/mcp" || web.Headers["Authorization"] != "Bearer s3cret" ||
		web.Prefix == nil || *web.Prefix != "" || !web.Optional {
		t.Errorf("web %+v", web)
	}
	// The config itself keeps the unexpanded text.
	if cfg.MCP["web"].Headers["Authorization"] != "Bearer ${TOKEN}" {
		t.Error("MCPServers changed the config")
	}
}

func TestMCPServersErrors(t *testing.T) {
	cfg, err := Parse("lathe.toml", []byte(`
[mcp.none]
timeout = "1s"

[mcp.both]
command = ["x"]
url = "http://x"

[mcp.unset]
url = "http://${NOPE}/mcp"

[mcp.badprefix]
command = ["x"]
prefix = "9__"
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = cfg.MCPServers(func(string) (string, bool) { return "", false })
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"lathe.toml:2: [mcp.none] set command",
		"lathe.toml:5: [mcp.both] set command (a server over stdio) or url (over streamable HTTP), not both",
		"lathe.toml:9: [mcp.unset] url: ${NOPE} is not set",
		"lathe.toml:12: [mcp.badprefix] invalid prefix",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}

	if _, err := Parse("x.toml", []byte("[mcp.a]\ncomand = [\"x\"]\n")); err == nil || !strings.Contains(err.Error(), `did you mean "command"`) {
		t.Errorf("typo: %v", err)
	}
}

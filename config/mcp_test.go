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

[mcp.loud]
command = ["x"]
log_level = "loud"
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
		`lathe.toml:16: [mcp.loud] log_level = "loud": not an MCP log level (one of debug, info,`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}

	if _, err := Parse("x.toml", []byte("[mcp.a]\ncomand = [\"x\"]\n")); err == nil || !strings.Contains(err.Error(), `did you mean "command"`) {
		t.Errorf("typo: %v", err)
	}
}

// An optional server whose ${VAR} is not set is returned, marked
// unavailable with the reason and its line, for the caller to skip; a
// required one is an error, as before.
func TestMCPServersOptionalUnset(t *testing.T) {
	cfg, err := Parse("lathe.toml", []byte(`
[mcp.opt]
command = ["srv"]
env = { TOKEN = "${NOPE_TOKEN}" }
optional = true

[mcp.ok]
command = ["srv", "${HERE}"]
optional = true
`))
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(k string) (string, bool) { return "x", k == "HERE" }
	servers, err := cfg.MCPServers(lookup)
	if err != nil {
		t.Fatalf("an optional server's unset variable is fatal: %v", err)
	}
	if len(servers) != 2 || servers[0].Name != "ok" || servers[1].Name != "opt" {
		t.Fatalf("servers %+v", servers)
	}
	if servers[0].Unavailable != nil || servers[0].Command[1] != "x" {
		t.Errorf("ok: %+v", servers[0])
	}
	if u := servers[1].Unavailable; u == nil || u.Error() != "lathe.toml:2: [mcp.opt] env.TOKEN: ${NOPE_TOKEN} is not set in the environment" {
		t.Errorf("opt: unavailable = %v", u)
	}

	cfg.MCP["opt"].Optional = false
	if _, err := cfg.MCPServers(lookup); err == nil || !strings.Contains(err.Error(), "${NOPE_TOKEN} is not set") {
		t.Errorf("required server: %v", err)
	}
}

// [mcp.NAME] takes a sandbox profile and permissions for its command; they
// make no sense for a server over HTTP, and the names of permissions.env
// and of env are checked.
func TestMCPServerSandbox(t *testing.T) {
	cfg, err := Parse("lathe.toml", []byte(`
[mcp.fs]
command = ["srv"]
profile = "standard"
[mcp.fs.permissions]
read = ["/srv/data"]
network = true
env = ["GITHUB_TOKEN"]
`))
	if err != nil {
		t.Fatal(err)
	}
	servers, err := cfg.MCPServers(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	fs := servers[0]
	if fs.Profile != "standard" || fs.Permissions.Read[0] != "/srv/data" || !fs.Permissions.Network || fs.Permissions.Env[0] != "GITHUB_TOKEN" {
		t.Errorf("fs %+v", fs)
	}

	if _, err := Parse("lathe.toml", []byte("[mcp.x]\ncommand = [\"x\"]\nprofile = \"loose\"\n")); err == nil ||
		!strings.Contains(err.Error(), "lathe.toml:3") || !strings.Contains(err.Error(), "loose") {
		t.Errorf("bad profile: %v", err)
	}
	cfg, err = Parse("lathe.toml", []byte(`
[mcp.web]
url = "http://x/mcp"
profile = "standard"

[mcp.names]
command = ["x"]
env = { "NOT A NAME" = "v" }
permissions = { env = ["A-B"] }
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = cfg.MCPServers(func(string) (string, bool) { return "", false })
	for _, want := range []string{
		"lathe.toml:2: [mcp.web] profile and permissions confine a server's command",
		`lathe.toml:6: [mcp.names] env: "NOT A NAME" is not a variable name`,
		`lathe.toml:6: [mcp.names] env: "A-B" is not a variable name`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

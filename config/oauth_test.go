package config

import (
	"strings"
	"testing"
)

func TestMCPOAuth(t *testing.T) {
	cfg, err := Parse("lathe.toml", []byte(`
[mcp.notes]
url = "https://notes.example/mcp"
oauth.client_id = "lathe-cli"
oauth.client_secret = "${NOTES_SECRET}"
oauth.scopes = ["notes.read"]
oauth.callback_port = 8765
`))
	if err != nil {
		t.Fatal(err)
	}
	servers, err := cfg.MCPServers(func(k string) (string, bool) { return "s3cret", k == "NOTES_SECRET" })
	if err != nil {
		t.Fatal(err)
	}
	o := servers[0].OAuth
	if o.ClientID != "lathe-cli" || o.ClientSecret != "s3cret" || len(o.Scopes) != 1 || o.CallbackPort != 8765 {
		t.Errorf("oauth %+v", o)
	}
	// The table changes how lathe reaches the server: a workspace file
	// needs trust for it.
	_, ws := cfg.Split()
	found := false
	for _, w := range ws {
		found = found || strings.HasPrefix(w.Key, "mcp.notes.oauth")
	}
	if !found {
		t.Errorf("Split reports %v, not the oauth table", ws)
	}
}

func TestMCPOAuthErrors(t *testing.T) {
	for file, want := range map[string]string{
		"[mcp.a]\ncommand = [\"x\"]\noauth.client_id = \"c\"\n":                               "lathe.toml:1: [mcp.a] oauth authorizes a server over HTTP",
		"[mcp.a]\nurl = \"https://a/mcp\"\noauth.client_secret = \"s\"\n":                     "lathe.toml:1: [mcp.a] oauth.client_secret needs oauth.client_id",
		"[mcp.a]\nurl = \"https://a/mcp\"\noauth.callback_port = 70000\n":                     "oauth.callback_port 70000 is not a port",
		"[mcp.a]\nurl = \"https://a/mcp\"\noauth.client_metadata_url = \"http://a/c.json\"\n": "must be an https URL",
		"[mcp.a]\nurl = \"https://a/mcp\"\noauth.client_di = \"c\"\n":                         "client_di",
	} {
		cfg, err := Parse("lathe.toml", []byte(file))
		if err == nil {
			_, err = cfg.MCPServers(func(string) (string, bool) { return "", false })
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", file, err, want)
		}
	}
}

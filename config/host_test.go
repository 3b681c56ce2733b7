package config

import (
	"strings"
	"testing"
)

// The host permission keys are checked at load, each problem with the
// file and line of its table.
func TestHostPermissionErrors(t *testing.T) {
	cfg, err := Parse("lathe.toml", []byte(`
[tools.fmt]
command = ["./fmt"]
runtime = "vfs"
read = ["src/**", "../secrets", "src/*/../.."]
write = ["out/", "/abs/ok/here"]
net = ["api.example.com:443", "https://api.example.com", "*"]
run = ["git", "git status", "../bin/x"]

[toolsets.text]
command = ["./text"]
write = ["../../etc"]
net = ["host:99999"]
`))
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.CheckLocal()
	if err == nil {
		t.Fatal("CheckLocal accepted bad host permissions")
	}
	msg := err.Error()
	for _, want := range []string{
		`lathe.toml:2: [tools.fmt] read: "../secrets" leads out of the workspace`,
		`lathe.toml:2: [tools.fmt] read: "src/*/../.." leads out of the workspace`,
		`lathe.toml:2: [tools.fmt] net: "https://api.example.com" is not a host`,
		`lathe.toml:2: [tools.fmt] net: "*" would match only one-label names`,
		`lathe.toml:2: [tools.fmt] run: "git status": run lists programs, not command lines`,
		`lathe.toml:2: [tools.fmt] run: "../bin/x" leads out of the workspace`,
		`lathe.toml:10: [toolsets.text] write: "../../etc" leads out of the workspace`,
		`lathe.toml:10: [toolsets.text] net: "host:99999": the port`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the errors do not say %q:\n%s", want, msg)
		}
	}
	for _, fine := range []string{`"src/**"`, `"out/"`, `"/abs/ok/here"`, `"api.example.com:443"`, `run: "git"`} {
		if strings.Contains(msg, fine+" ") || strings.Contains(msg, fine+":") {
			t.Errorf("a good entry %s is reported:\n%s", fine, msg)
		}
	}
}

package config

import (
	"strings"
	"testing"
	"time"
)

func TestSandboxTable(t *testing.T) {
	c, err := Parse("lathe.toml", []byte(`
[sandbox]
profile = "dev"
[sandbox.limits]
wall_time = "30s"
memory = 1048576
[sandbox.permissions]
network = true
env = ["A"]
[tools.x]
profile = "hardened"
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Sandbox.Profile != "dev" || c.Sandbox.Limits.WallTime != 30*time.Second || c.Sandbox.Limits.Memory != 1<<20 ||
		!c.Sandbox.Permissions.Network || c.Tools["x"].Profile != "hardened" {
		t.Errorf("%+v %+v", c.Sandbox, c.Tools["x"])
	}
	_, err = Parse("lathe.toml", []byte("[sandbox]\nprofile = \"loose\"\n"))
	if err == nil || !strings.Contains(err.Error(), "lathe.toml:2") || !strings.Contains(err.Error(), "loose") {
		t.Errorf("err = %v", err)
	}
}

// A toolset's profile is parsed and checked like a tool's: an unknown one
// is an error naming the file and the line of the key.
func TestToolsetProfile(t *testing.T) {
	c, err := Parse("lathe.toml", []byte(`
[toolsets.kit]
command = ["./kit"]
profile = "standard"
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Toolsets["kit"].Profile; got != "standard" {
		t.Errorf("profile = %q, want standard", got)
	}
	_, err = Parse("lathe.toml", []byte(`
[toolsets.kit]
command = ["./kit"]
profile = "strict"
`))
	if err == nil || !strings.Contains(err.Error(), `lathe.toml:4: toolsets.kit.profile: unknown sandbox profile "strict"`) {
		t.Errorf("err = %v", err)
	}
}

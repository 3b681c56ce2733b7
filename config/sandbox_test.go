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

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

func TestSandboxCPUs(t *testing.T) {
	for src, want := range map[string]float64{"cpus = 1.5": 1.5, "cpus = 2": 2, "": 0} {
		c, err := Parse("lathe.toml", []byte("[sandbox.limits]\n"+src+"\n"))
		if err != nil || c.Sandbox.Limits.CPUs != want {
			t.Errorf("%q: cpus %v, %v; want %v", src, c.Sandbox.Limits.CPUs, err, want)
		}
	}
	for src, want := range map[string]string{
		"cpus = -1":    `lathe.toml:2: sandbox.limits.cpus: must not be negative, got -1`,
		"cpus = -0.5":  `lathe.toml:2: sandbox.limits.cpus: must not be negative, got -0.5`,
		`cpus = "two"`: `lathe.toml:2: sandbox.limits.cpus: expected`,
	} {
		_, err := Parse("lathe.toml", []byte("[sandbox.limits]\n"+src+"\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error containing %q", src, err, want)
		}
	}
}

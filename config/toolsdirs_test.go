package config

import (
	"strings"
	"testing"
)

func TestToolsDirs(t *testing.T) {
	t.Setenv("HOME", "/home/ada")
	c, err := Parse("lathe.toml", []byte("tools_dirs = [\"~/js\", \"/opt/tools/\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.ToolsDirs, ",") != "/home/ada/js,/opt/tools" {
		t.Errorf("tools_dirs = %v", c.ToolsDirs)
	}
	// Loading tools runs code: the key needs trust.
	n, ws := c.Split()
	if len(n.ToolsDirs) != 0 || len(ws) != 1 || ws[0].Key != "tools_dirs" {
		t.Errorf("untrusted part %v, widenings %v", n.ToolsDirs, ws)
	}
	_, err = Parse("lathe.toml", []byte("# tools\n\ntools_dirs = [\"js\"]\n"))
	if err == nil || !strings.Contains(err.Error(), "lathe.toml:3:") || !strings.Contains(err.Error(), `"js" is not an absolute path`) {
		t.Errorf("err = %v, want one at lathe.toml:3", err)
	}
}

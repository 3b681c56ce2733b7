package config_test

import (
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/config"
)

const routedConfig = `
[temporal]
address = "temporal.example:7233"

[tools.transcribe]
queue = "gpu"
summary = "Transcribe audio"

[toolsets.media]
command = ["media-tools"]
prefix = "media_"
queue = "gpu"

[mcp.search]
command = ["search-server"]
queue = "net"

[tools.local_only]
command = ["true"]
`

// TestRoutes: the tables with a queue are the routes, but for the queue
// the reader serves itself, whose tools run where it is.
func TestRoutes(t *testing.T) {
	c, err := config.Parse("lathe.toml", []byte(routedConfig))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range c.Routes("") {
		got = append(got, r.Table()+"@"+r.Queue)
	}
	if want := "tools.transcribe@gpu toolsets.media@gpu mcp.search@net"; strings.Join(got, " ") != want {
		t.Errorf("routes: got %v, want %s", got, want)
	}
	got = nil
	for _, r := range c.Routes("gpu") {
		got = append(got, r.Table())
	}
	if strings.Join(got, " ") != "mcp.search" {
		t.Errorf("routes of a worker of gpu: got %v, want only mcp.search", got)
	}
}

// TestQueueNeedsTrust: an untrusted file cannot send calls, with their
// arguments, to workers of its choosing, nor to a server of its choosing:
// queue and [temporal] are widenings, left out until trusted.
func TestQueueNeedsTrust(t *testing.T) {
	c, err := config.Parse("lathe.toml", []byte(routedConfig))
	if err != nil {
		t.Fatal(err)
	}
	n, ws := c.Split()
	if r := n.Routes(""); len(r) != 0 {
		t.Errorf("the untrusted part routes %v", r)
	}
	if n.Temporal != (config.Temporal{}) {
		t.Errorf("the untrusted part names a server: %+v", n.Temporal)
	}
	if tt := n.Tools["transcribe"]; tt == nil || tt.Summary != "Transcribe audio" {
		t.Errorf("the narrowing part of [tools.transcribe] was lost: %+v", tt)
	}
	keys := map[string]bool{}
	for _, w := range ws {
		keys[w.Key] = true
	}
	for _, k := range []string{"tools.transcribe.queue", "toolsets.media.queue", "mcp.search.queue", "temporal.address"} {
		if !keys[k] {
			t.Errorf("no widening listed for %s; got %v", k, ws)
		}
	}
}

// TestQueueName: a queue name is checked where it is written.
func TestQueueName(t *testing.T) {
	_, err := config.Parse("lathe.toml", []byte("[tools.x]\nqueue = \"a b\"\n"))
	if err == nil || !strings.Contains(err.Error(), "lathe.toml:2") || !strings.Contains(err.Error(), "queue name") {
		t.Errorf("want an error at lathe.toml:2 naming the queue, got %v", err)
	}
}

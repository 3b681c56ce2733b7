package provider_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/internal/mcptest"
	"github.com/lathe-tools/lathe/provider"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

const serverEnv = "LATHE_PROVIDER_TEST_SERVER"

func TestMain(m *testing.M) {
	// The test binary doubles as the go-sdk conformance server, so that
	// its tools are listed through lathe's MCP client as any upstream's.
	if os.Getenv(serverEnv) == "conformance" {
		mcptest.ServeConformance()
		return
	}
	os.Exit(m.Run())
}

// upstream lists the tools of MCP servers through lathe's MCP client.
func upstream(t *testing.T, cfgs ...mcp.Config) []tool.Definition {
	t.Helper()
	e := lathe.New(lathe.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := mcp.Open(ctx, e, cfgs, mcp.Options{})
	if err != nil {
		t.Fatalf("listing the tools of %s: %v", cfgs[0].Name, err)
	}
	t.Cleanup(func() {
		e.Close()
		p.Close()
	})
	defs := e.Tools()
	if len(defs) == 0 {
		t.Fatalf("%s lists no tools", cfgs[0].Name)
	}
	return defs
}

// corpus returns every schema the conversion is checked on, by where it
// comes from: the standard tools, the reference MCP servers
// (server-everything and server-filesystem) and the go-sdk conformance
// server.
func corpus(t *testing.T) map[string][]tool.Definition {
	dir := t.TempDir()
	std, err := tools.Standard(dir, tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]tool.Definition{}
	for _, tl := range std {
		out["standard"] = append(out["standard"], tl.Definition)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out["conformance"] = upstream(t, mcp.Config{Name: "conformance", Command: []string{exe, "-test.run=^$"},
		Env: map[string]string{serverEnv: "conformance"}})
	if mcptest.Installed() || os.Getenv("CI") != "" {
		out["server-everything"] = upstream(t, mcp.Config{Name: "everything", Command: mcptest.Everything(t)})
		out["server-filesystem"] = upstream(t, mcp.Config{Name: "fs", Command: mcptest.Filesystem(t, dir)})
	} else {
		t.Log("the reference MCP servers are not installed: their schemas are not checked (run .ci/run)")
	}
	return out
}

// TestCorpusFollowsEachProvidersRules converts every schema of the corpus
// to every format and checks the result against the provider's documented
// rules; a schema that goes out without strict mode must come with a
// warning that names its tool.
func TestCorpusFollowsEachProvidersRules(t *testing.T) {
	for source, defs := range corpus(t) {
		for _, f := range provider.Formats() {
			strict, total := 0, 0
			for _, d := range defs {
				ts, err := provider.Convert(f, []tool.Definition{d}, nil)
				if err != nil {
					t.Errorf("%s %s in %s: %v", source, d.Name, f, err)
					continue
				}
				out, err := json.Marshal(ts)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range violations(f, out) {
					t.Errorf("%s, format %s: %s\n%s", source, f, v, out)
				}
				total++
				if isStrict(out) {
					strict++
				} else if f == provider.OpenAI || f == provider.OpenAIResponses || f == provider.Anthropic {
					if len(ts.Warnings) == 0 || ts.Warnings[0].Tool != d.Name || !strings.Contains(ts.Warnings[0].Reason, "not strict") {
						t.Errorf("%s %s in %s is not strict, with no warning saying why: %v", source, d.Name, f, ts.Warnings)
					}
				}
				for _, w := range ts.Warnings {
					t.Logf("%s, %s: %s", source, f, w)
				}
			}
			if f == provider.OpenAI || f == provider.Anthropic {
				t.Logf("%s, %s: %d of %d tools strict", source, f, strict, total)
			}
		}
	}
}

// isStrict reports whether the one tool of a converted set is strict.
func isStrict(out []byte) bool {
	var tools []map[string]any
	if json.Unmarshal(out, &tools) != nil || len(tools) != 1 {
		return false
	}
	if fn, ok := tools[0]["function"].(map[string]any); ok {
		return fn["strict"] == true
	}
	return tools[0]["strict"] == true
}

// TestStandardToolsAreStrict: the standard tools' schemas are lathe's own,
// and each one fits strict mode; a change that breaks that shows here.
func TestStandardToolsAreStrict(t *testing.T) {
	std, err := tools.Standard(t.TempDir(), tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var defs []tool.Definition
	for _, tl := range std {
		defs = append(defs, tl.Definition)
	}
	for _, f := range []provider.Format{provider.OpenAI, provider.OpenAIResponses, provider.Anthropic} {
		ts, err := provider.Convert(f, defs, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ts.Warnings {
			t.Errorf("%s: %s", f, w)
		}
	}
}

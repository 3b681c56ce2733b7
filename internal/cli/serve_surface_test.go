package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/internal/mcptest"
)

// TestServeUpstreamSurface: `lathe serve` offers the resources and prompts
// of the workspace's upstream servers, declares what they back, and keeps
// those of a server whose table says resources = false and prompts = false.
func TestServeUpstreamSurface(t *testing.T) {
	argv := mcptest.Everything(t)
	ws := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(ws, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(t.TempDir(), "state"))
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = strconv.Quote(a)
	}
	cmd := "command = [" + strings.Join(quoted, ", ") + "]\n"
	conf := "[mcp.ev]\n" + cmd + "log_level = \"error\"\n\n[mcp.quiet]\n" + cmd + "prefix = \"q_\"\nresources = false\nprompts = false\n"
	if err := os.WriteFile(filepath.Join(ws, "lathe.toml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"--workspace", ws, "trust", "--yes"},
		Streams{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
		t.Fatalf("trust: %d: %s", code, errb.String())
	}
	url, stderr := startServeIn(t, ws, "--http", "127.0.0.1:0")
	m := regexp.MustCompile(`Authorization: Bearer (\w+)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no token printed: %s", stderr)
	}
	cs, err := connectHTTP(t, url, "Bearer "+m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	caps := cs.InitializeResult().Capabilities
	if caps.Resources == nil || caps.Prompts == nil || caps.Logging == nil {
		t.Fatalf("capabilities: %+v", caps)
	}
	var prompts []string
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	if len(prompts) == 0 {
		t.Fatal("no prompts")
	}
	for _, p := range prompts {
		if !strings.HasPrefix(p, "ev__") {
			t.Errorf("prompt %q: not ev's (quiet keeps its own)", p)
		}
	}
	n := 0
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		// quiet is the same server: had it offered its resources, every
		// URI would be contested and none listed.
		if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: r.URI}); err != nil {
			t.Fatalf("read %s: %v", r.URI, err)
		}
		break
	}
	if n == 0 {
		t.Fatal("no resources: quiet's were not kept from clients, or ev's are not offered")
	}
}

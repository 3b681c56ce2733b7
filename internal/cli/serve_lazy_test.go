package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/internal/mcptest"
)

// lazyWorkspace writes a workspace with two upstream servers, a and b,
// each run through a shell that appends a line to its own file when it
// starts, and returns the workspace and a function that counts a server's
// starts. bExtra is more of b's table.
func lazyWorkspace(t *testing.T, bExtra string) (ws string, starts func(name string) int) {
	t.Helper()
	argv := mcptest.Everything(t)
	ws = t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(ws, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(t.TempDir(), "state"))
	t.Setenv("LATHE_CACHE_DIR", filepath.Join(t.TempDir(), "cache"))
	logs := t.TempDir()
	server := func(name, extra string) string {
		q := []string{strconv.Quote("/bin/sh"), strconv.Quote("-c"),
			strconv.Quote(`echo started >> "$LATHE_TEST_STARTS"; exec "$@"`), strconv.Quote("sh")}
		for _, a := range argv {
			q = append(q, strconv.Quote(a))
		}
		return "[mcp." + name + "]\ncommand = [" + strings.Join(q, ", ") + "]\n" +
			"env = { LATHE_TEST_STARTS = " + strconv.Quote(filepath.Join(logs, name)) + " }\n" + extra + "\n"
	}
	conf := server("a", "") + server("b", "prefix = \"b_\"\n"+bExtra)
	if err := os.WriteFile(filepath.Join(ws, "lathe.toml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"--workspace", ws, "trust", "--yes"},
		Streams{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
		t.Fatalf("trust: %d: %s", code, errb.String())
	}
	return ws, func(name string) int {
		b, err := os.ReadFile(filepath.Join(logs, name))
		if os.IsNotExist(err) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Count(b, []byte("started\n"))
	}
}

// TestServeStartsUpstreamsLazily: with the caches warm (one `lathe list`),
// `lathe serve` declares its capabilities and serves tools/list,
// resources/list, prompts/list and a builtin call without starting an
// upstream server; a resource read starts the one server that holds it,
// and no other.
func TestServeStartsUpstreamsLazily(t *testing.T) {
	// b keeps its resources from clients, so that a alone backs them.
	ws, starts := lazyWorkspace(t, "resources = false\n")
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"--workspace", ws, "list"},
		Streams{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
		t.Fatalf("list: %d: %s", code, errb.String())
	}
	if starts("a") != 1 || starts("b") != 1 {
		t.Fatalf("lathe list with cold caches: a started %d times, b %d, want once each", starts("a"), starts("b"))
	}

	cs := serveClient(t, ws)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	caps := cs.InitializeResult().Capabilities
	if caps.Resources == nil || caps.Prompts == nil {
		t.Fatalf("capabilities from the cache: %+v, want resources and prompts", caps)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "hello.txt"}})
	if err != nil || res.IsError {
		t.Fatalf("read_file: %+v %v", res, err)
	}
	var uri string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uri = r.URI
		break
	}
	if uri == "" {
		t.Fatal("no resources listed from the cache")
	}
	n := 0
	for _, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no prompts listed from the cache")
	}
	if starts("a") != 1 || starts("b") != 1 {
		t.Fatalf("serving from warm caches started upstreams: a %d times, b %d, want once each (by lathe list)", starts("a"), starts("b"))
	}

	r, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil || len(r.Contents) == 0 {
		t.Fatalf("read %s: %+v %v", uri, r, err)
	}
	if starts("a") != 2 || starts("b") != 1 {
		t.Fatalf("a resource read of a's started a %d times and b %d, want a once more and b not", starts("a"), starts("b"))
	}
}

// serveClient starts lathe serve --http in ws and connects a client to it.
func serveClient(t *testing.T, ws string) *sdk.ClientSession {
	t.Helper()
	url, stderr := startServeIn(t, ws, "--http", "127.0.0.1:0")
	m := regexp.MustCompile(`Authorization: Bearer (\w+)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no token printed: %s", stderr)
	}
	cs, err := connectHTTP(t, url, "Bearer "+m[1])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// auditRecords returns the workspace's audit log as lathe audit --json
// shows it.
func auditRecords(t *testing.T, ws string) []audit.Record {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"--workspace", ws, "audit", "--json"},
		Streams{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
		t.Fatalf("audit: %d: %s", code, errb.String())
	}
	var recs []audit.Record
	if err := json.Unmarshal(out.Bytes(), &recs); err != nil {
		t.Fatalf("audit --json: %v: %s", err, out.String())
	}
	return recs
}

// TestServeAuditsReadsAndGets: a resource read and a prompt get through
// lathe serve --http are in the audit log, with the session and the
// server; lathe audit shows them.
func TestServeAuditsReadsAndGets(t *testing.T) {
	ws, _ := lazyWorkspace(t, "resources = false\n")
	cs := serveClient(t, ws)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var uri string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uri = r.URI
		break
	}
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	if _, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "b_simple-prompt"}); err != nil {
		t.Fatalf("prompt: %v", err)
	}
	var read, got bool
	for _, r := range auditRecords(t, ws) {
		switch {
		case r.Kind == audit.KindResourceRead && r.Tool == uri:
			read = r.Server == "a" && r.Outcome == "ok" && r.Session != "" && r.ResultBytes > 0 && !r.Incomplete
			if !read {
				t.Errorf("the read's record: %+v", r)
			}
		case r.Kind == audit.KindPromptGet && r.Tool == "b_simple-prompt":
			got = r.Server == "b" && r.Outcome == "ok" && r.Session != ""
			if !got {
				t.Errorf("the prompt's record: %+v", r)
			}
		}
	}
	if !read || !got {
		t.Fatalf("records of the read (%v) and the get (%v) missing", read, got)
	}
	var out, errb bytes.Buffer
	Run(context.Background(), []string{"--workspace", ws, "audit"}, Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	if !strings.Contains(out.String(), "resource_read a:"+uri) {
		t.Errorf("lathe audit does not show the read:\n%s", out.String())
	}
}

// TestServeAuditsDeniedRead: a URI both upstream servers list is read
// from neither, and the refusal is in the audit log as denied. The
// control: with one server offering its resources, that URI is read.
func TestServeAuditsDeniedRead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	alone, _ := lazyWorkspace(t, "resources = false\n")
	cs := serveClient(t, alone)
	var uri string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uri = r.URI
		break
	}
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); err != nil {
		t.Fatalf("control: read of %q from one server: %v", uri, err)
	}

	ws, _ := lazyWorkspace(t, "")
	cs = serveClient(t, ws)
	_, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err == nil || !strings.Contains(err.Error(), "several servers") {
		t.Fatalf("read of a URI two servers list: %v, want a refusal", err)
	}
	found := false
	for _, r := range auditRecords(t, ws) {
		if r.Kind == audit.KindResourceRead && r.Tool == uri {
			found = true
			if r.Outcome != "denied" || r.Decision != "deny" || !strings.Contains(r.Reason, "several servers") || r.Incomplete {
				t.Errorf("the denied read's record: %+v", r)
			}
		}
	}
	if !found {
		t.Fatal("the denied read is not in the audit log")
	}
}

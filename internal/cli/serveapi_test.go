package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// apiGet reads url with the bearer token into out and returns the status.
func apiDo(t *testing.T, method, url, token, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

type pendingApproval struct {
	ID, Tool, Digest, Client string
}

// waitApproval polls the API until an approval is pending.
func waitApproval(t *testing.T, base, token string) pendingApproval {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var list struct{ Approvals []pendingApproval }
		apiDo(t, "GET", base+"/api/approvals", token, "", &list)
		if len(list.Approvals) > 0 {
			return list.Approvals[0]
		}
	}
	t.Fatal("no approval appeared at /api/approvals within 15s")
	return pendingApproval{}
}

// TestServeApprovalFromAPI: through a real lathe serve, a call of an MCP
// client that offers no elicitation waits for its approval, which is
// answered at /api/approvals; the tool then runs, and the audit log says a
// remote person approved it. A deny answered there leaves the file
// unwritten.
func TestServeApprovalFromAPI(t *testing.T) {
	ws := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(ws, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(t.TempDir(), "state"))
	url, _ := startServeIn(t, ws, "--http", "127.0.0.1:0", "--token", "tok")
	base := strings.TrimSuffix(url, "/mcp")
	if st := apiDo(t, "GET", base+"/api/approvals", "wrong", "", nil); st != 401 {
		t.Errorf("wrong token: %d, want 401", st)
	}
	cs, err := connectHTTP(t, url, "Bearer tok") // a client without elicitation
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(path string) <-chan *sdk.CallToolResult {
		done := make(chan *sdk.CallToolResult, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "write_file",
				Arguments: map[string]any{"path": path, "content": "written"}})
			if err != nil {
				res = &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}
			}
			done <- res
		}()
		return done
	}
	wait := func(done <-chan *sdk.CallToolResult) *sdk.CallToolResult {
		select {
		case r := <-done:
			return r
		case <-time.After(30 * time.Second):
			t.Fatal("the MCP call did not end within 30s")
			return nil
		}
	}

	done := call("yes.txt")
	a := waitApproval(t, base, "tok")
	if a.Tool != "write_file" || a.Client != "mcp" {
		t.Errorf("approval %+v", a)
	}
	if _, err := os.Stat(filepath.Join(ws, "yes.txt")); err == nil {
		t.Fatal("the file was written before the approval was answered")
	}
	if st := apiDo(t, "POST", base+"/api/approvals/"+a.ID, "tok", `{"answer":"once","digest":"`+a.Digest+`"}`, nil); st != 200 {
		t.Fatalf("answer: %d", st)
	}
	if r := wait(done); r.IsError {
		t.Fatalf("approved call failed: %+v", r.Content)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "yes.txt")); err != nil || string(b) != "written" {
		t.Errorf("after the approval: %q, %v", b, err)
	}

	done = call("no.txt")
	a = waitApproval(t, base, "tok")
	if st := apiDo(t, "POST", base+"/api/approvals/"+a.ID, "tok", `{"answer":"deny","reason":"not now","digest":"`+a.Digest+`"}`, nil); st != 200 {
		t.Fatalf("deny: %d", st)
	}
	r := wait(done)
	if text := r.Content[0].(*sdk.TextContent).Text; !r.IsError || !strings.Contains(text, "not now") {
		t.Errorf("denied call: %v %s", r.IsError, text)
	}
	if _, err := os.Stat(filepath.Join(ws, "no.txt")); err == nil {
		t.Error("a denied call wrote its file")
	}

	var audit struct {
		Records []struct {
			Tool, Outcome string
			DecidedBy     string `json:"decided_by"`
		}
	}
	apiDo(t, "GET", base+"/api/audit?tool=write_file", "tok", "", &audit)
	if len(audit.Records) != 2 || audit.Records[0].Outcome != "denied" || audit.Records[1].Outcome != "ok" ||
		audit.Records[1].DecidedBy != "remote" {
		t.Errorf("audit %+v", audit.Records)
	}
}

// TestServeApprovalWait: [serve] approval_wait ends an unanswered wait,
// and the call is denied saying so.
func TestServeApprovalWait(t *testing.T) {
	ws := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(ws, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(t.TempDir(), "state"))
	os.WriteFile(filepath.Join(ws, "lathe.toml"), []byte("[serve]\napproval_wait = \"300ms\"\n"), 0o644)
	if code := Run(context.Background(), []string{"--workspace", ws, "trust", "--yes"}, Streams{In: strings.NewReader(""), Out: &strings.Builder{}, Err: &strings.Builder{}}); code != 0 {
		t.Fatalf("lathe trust --yes exited with %d", code)
	}
	url, stderr := startServeIn(t, ws, "--http", "127.0.0.1:0", "--token", "tok")
	cs, err := connectHTTP(t, url, "Bearer tok")
	if err != nil {
		t.Fatal(err, stderr)
	}
	defer cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "w.txt", "content": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	if !res.IsError || !strings.Contains(text, "approval_wait") {
		t.Errorf("unanswered call: %v %s", res.IsError, text)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the unanswered call took %s; its wait is 300ms", d)
	}
}

// TestServeReload: POST /api/reload serves the configuration as it is
// now; a change that needs trust is refused with 409 and one that does not
// load with 422 naming the line, and either leaves the running
// configuration served.
func TestServeReload(t *testing.T) {
	ws := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(ws, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(t.TempDir(), "state"))
	toml := filepath.Join(ws, "lathe.toml")
	os.WriteFile(toml, []byte("[defaults]\ntimeout = \"30s\"\n"), 0o644)
	trust := func() {
		t.Helper()
		if code := Run(context.Background(), []string{"--workspace", ws, "trust", "--yes"},
			Streams{In: strings.NewReader(""), Out: &strings.Builder{}, Err: &strings.Builder{}}); code != 0 {
			t.Fatalf("lathe trust --yes exited with %d", code)
		}
	}
	trust()
	url, _ := startServeIn(t, ws, "--http", "127.0.0.1:0", "--token", "tok")
	base := strings.TrimSuffix(url, "/mcp")
	policyOf := func(name string) string {
		var out struct {
			Tools []struct {
				Name   string
				Policy struct{ Decision, Rule string }
			}
		}
		apiDo(t, "GET", base+"/api/tools", "tok", "", &out)
		for _, tl := range out.Tools {
			if tl.Name == name {
				return tl.Policy.Decision + " " + tl.Policy.Rule
			}
		}
		return "no tool " + name
	}
	if p := policyOf("read_file"); p != "allow " {
		t.Fatalf("read_file before: %q", p)
	}
	var e struct {
		Error struct{ Kind, Message string }
	}
	// Letting write_file run unasked widens what runs: it needs trust.
	widened := "[defaults]\ntimeout = \"30s\"\n\n[[policy.rules]]\ntool = \"read_file\"\napproval = \"deny\"\n\n" +
		"[[policy.rules]]\ntool = \"write_file\"\napproval = \"allow\"\n"
	os.WriteFile(toml, []byte(widened), 0o644)
	if st := apiDo(t, "POST", base+"/api/reload", "tok", "{}", &e); st != 409 || e.Error.Kind != "untrusted" {
		t.Errorf("reload of an untrusted change: %d %+v, want 409", st, e)
	}
	if p := policyOf("read_file"); p != "allow " {
		t.Errorf("read_file after a refused reload: %q", p)
	}
	if p := policyOf("write_file"); p != "ask " {
		t.Errorf("write_file after a refused reload: %q", p)
	}
	trust()
	if st := apiDo(t, "POST", base+"/api/reload", "tok", "{}", &e); st != 200 {
		t.Fatalf("reload: %d %+v", st, e)
	}
	if p := policyOf("read_file"); !strings.HasPrefix(p, "deny ") || !strings.Contains(p, "lathe.toml:4") {
		t.Errorf("read_file after the reload: %q, want deny by lathe.toml:4", p)
	}
	if p := policyOf("write_file"); !strings.HasPrefix(p, "allow ") {
		t.Errorf("write_file after the reload: %q, want allow", p)
	}
	var out struct{ Call struct{ Outcome string } }
	apiDo(t, "POST", base+"/api/calls", "tok", `{"tool":"read_file","arguments":{"path":"lathe.toml"}}`, &out)
	if out.Call.Outcome != "denied" {
		t.Errorf("a call after the reload: %q, want denied", out.Call.Outcome)
	}
	// MCP is served by the new configuration too.
	cs, err := connectHTTP(t, url, "Bearer tok")
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "lathe.toml"}})
	if err != nil || !res.IsError {
		t.Errorf("an MCP call after the reload: %v %+v, want denied", err, res)
	}
	cs.Close()
	os.WriteFile(toml, []byte("[defaults]\ntimeout = \"soon\"\n"), 0o644)
	if st := apiDo(t, "POST", base+"/api/reload", "tok", "{}", &e); st != 422 || !strings.Contains(e.Error.Message, "lathe.toml:2") {
		t.Errorf("reload of a bad file: %d %+v, want 422 naming lathe.toml:2", st, e)
	}
	if p := policyOf("read_file"); !strings.HasPrefix(p, "deny ") {
		t.Errorf("read_file after a failed reload: %q, want the running policy", p)
	}
}

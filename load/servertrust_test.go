package load_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/tool"
)

// liarEnv switches the test binary into an upstream MCP server that lies
// about its tools (see [mcptest.ServeLiar]): "environ" returns its
// environment, a secret included, and calls itself read-only.
const liarEnv = "LATHE_LOAD_TEST_LIAR"

// liarTable is an [mcp.up] table that starts the lying server, whose
// environment holds a secret.
func liarTable(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("[mcp.up]\ncommand = [%q]\nenv = { %s = \"1\", LIAR_SECRET = \"hunter2\" }\n", exe, liarEnv)
}

const secret = "LIAR_SECRET=hunter2"

// A server's annotations are its claims. Unless the configuration says to
// take its word, a tool it calls read-only gets no call run unasked (here,
// with nobody to ask, a denial that says what would allow it) and no place
// beside its own calls in a batch. trust_annotations, a [tools.NAME]
// effect or the server's approval change that, and each is shown to let
// the secret out, so the denial is what stopped it.
func TestUpstreamClaimsNotTrusted(t *testing.T) {
	ctx := testContext(t)
	for _, tc := range []struct {
		name     string
		extra    string // appended to the [mcp.up] table
		allowed  bool
		parallel bool     // two calls of environ run at once
		message  []string // in the denial
	}{
		{"claims alone", "", false, false, []string{
			`[[policy.rules]] tool = "up__environ", approval = "allow"`,
			`[mcp.up] approval = "allow"`, `[tools.up__environ] read_only = true`,
			"[mcp.up] trust_annotations = true", "lathe.toml (then lathe trust)"}},
		{"trusted server", "trust_annotations = true\n", true, true, nil},
		{"override of one tool", "[tools.up__environ]\nread_only = true\n", true, true, nil},
		{"override over a trusted server", "trust_annotations = true\n[tools.up__environ]\nread_only = false\n", false, false, nil},
		{"server allows", "approval = \"allow\"\n", true, false, nil},
		{"server denies", "approval = \"deny\"\n", false, false, []string{
			`[[policy.rules]] tool = "up__environ", approval = "allow"`, `[mcp.up] approval = "deny" at `,
			filepath.Join("ws", "lathe.toml") + ":4"}},
		{"server asks, over trusted claims", "trust_annotations = true\napproval = \"ask\"\n", false, true, []string{
			`[mcp.up] approval = "ask" at `}},
		{"a rule wins over the server", "approval = \"ask\"\n[[policy.rules]]\ntool = \"up__environ\"\napproval = \"allow\"\n", true, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := workspace(t, map[string]string{"lathe.toml": liarTable(t) + tc.extra})
			w, err := load.Open(ctx, load.Options{Dir: ws, Trust: func(context.Context, load.Untrusted) (bool, error) { return true, nil }})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			d, ok := w.Engine.Lookup("up__environ")
			if !ok {
				t.Fatalf("no up__environ among %s", names(w))
			}
			out := w.Engine.Call(ctx, &tool.Call{Name: "up__environ", Arguments: json.RawMessage(`{}`)})
			ran := out.Result != nil && strings.Contains(out.Result.Text(), secret)
			if ran != tc.allowed {
				t.Errorf("the call ran: %v, want %v (outcome %+v, annotations %+v)", ran, tc.allowed, out.Result, d.Annotations)
			}
			if !tc.allowed {
				if !errors.Is(out.Err(), tool.ErrDenied) {
					t.Errorf("outcome %v, want a denial", out.Err())
				}
				for _, m := range tc.message {
					if !strings.Contains(out.Result.Text(), m) {
						t.Errorf("the denial %q does not say %q", out.Result.Text(), m)
					}
				}
			}
			p := w.Engine.PlanBatch([]*tool.Call{{Name: "up__environ"}, {Name: "up__environ"}})
			if parallel := len(p.After[1]) == 0; parallel != tc.parallel {
				t.Errorf("two calls run at once: %v, want %v (effects %v)", parallel, tc.parallel, p.Calls[1].Effects.String())
			}
		})
	}
}

// A workspace file nobody trusted cannot loosen a server of the user's
// file: its approval = "allow", trust_annotations = true and read_only =
// true are left out and named, and the server's tool still asks. Its
// approval = "deny" applies.
func TestUntrustedWorkspaceCannotTrustServer(t *testing.T) {
	ctx := testContext(t)
	for _, tc := range []struct {
		ws      string
		left    []string
		message string
	}{
		{"[mcp.up]\napproval = \"allow\"\ntrust_annotations = true\n[tools.up__environ]\nread_only = true\n",
			[]string{"mcp.up.approval", "mcp.up.trust_annotations", "tools.up__environ.read_only"}, "there is no one to ask"},
		{"[mcp.up]\napproval = \"deny\"\n", nil, `[mcp.up] approval = "deny"`},
	} {
		ws := workspace(t, map[string]string{"lathe.toml": tc.ws})
		user := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "lathe", "config.toml")
		if err := os.MkdirAll(filepath.Dir(user), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(user, []byte(liarTable(t)), 0o644); err != nil {
			t.Fatal(err)
		}
		w, err := load.Open(ctx, load.Options{Dir: ws})
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, u := range w.Untrusted {
			for _, wd := range u.Widenings {
				left = append(left, wd.Key)
			}
		}
		if strings.Join(left, " ") != strings.Join(tc.left, " ") {
			t.Errorf("%s: left out %q, want %q", tc.ws, left, tc.left)
		}
		out := w.Engine.Call(ctx, &tool.Call{Name: "up__environ", Arguments: json.RawMessage(`{}`)})
		if !errors.Is(out.Err(), tool.ErrDenied) || strings.Contains(out.Result.Text(), secret) ||
			!strings.Contains(out.Result.Text(), tc.message) {
			t.Errorf("%s: outcome %+v, want a denial saying %q", tc.ws, out.Result, tc.message)
		}
		w.Close()
	}
}

// [tools.NAME] effects apply to lathe's own tools as well, for the policy
// and the batch planner alike.
func TestBuiltinEffectOverride(t *testing.T) {
	ctx := testContext(t)
	ws := workspace(t, map[string]string{"lathe.toml": "[tools.read_file]\nread_only = false\n", "a.txt": "text"})
	w, err := load.Open(ctx, load.Options{Dir: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	args := json.RawMessage(`{"path":"a.txt"}`)
	out := w.Engine.Call(ctx, &tool.Call{Name: "read_file", Arguments: args})
	if !errors.Is(out.Err(), tool.ErrDenied) || !strings.Contains(out.Result.Text(), "[tools.read_file] read_only = true") {
		t.Errorf("read_file said not read-only: %+v, want a denial naming the key", out.Result)
	}
	p := w.Engine.PlanBatch([]*tool.Call{{Name: "read_file", Arguments: args}, {Name: "read_file", Arguments: args}})
	if len(p.After[1]) == 0 {
		t.Errorf("two calls of read_file said to write a.txt run at once: %v", p.Calls[1].Effects.String())
	}
}

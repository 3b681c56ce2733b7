package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// oneKey returns configurations that each set one leaf key of Config (in
// a [tools.x], [toolsets.x] or [mcp.x] table for the maps, in one rule for
// the policy), named by its path.
func oneKey() map[string]*Config {
	out := map[string]*Config{}
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		if f.Tag.Get("toml") == "-" {
			continue
		}
		forLeaves(f.Type, f.Name, func(path string, set func(reflect.Value)) {
			c := &Config{}
			set(reflect.ValueOf(c).Elem().Field(i))
			out[path] = c
		})
	}
	return out
}

// forLeaves calls each with a setter for every leaf below a value of type t
// (each leaf once with a non-zero value, and a *bool once true, once false).
func forLeaves(t reflect.Type, path string, each func(string, func(reflect.Value))) {
	switch {
	case t == reflect.TypeFor[Pos]():
		return
	case t.Kind() == reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("toml") == "-" {
				continue
			}
			forLeaves(f.Type, path+"."+f.Name, func(p string, set func(reflect.Value)) {
				each(p, func(v reflect.Value) { set(v.Field(i)) })
			})
		}
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.Pointer &&
		t.Elem().Elem().Kind() == reflect.Struct && t.Elem() != reflect.TypeFor[*Param]():
		forLeaves(t.Elem().Elem(), path+"[x]", func(p string, set func(reflect.Value)) {
			each(p, func(v reflect.Value) {
				e := reflect.New(t.Elem().Elem())
				set(e.Elem())
				v.Set(reflect.MakeMap(t))
				v.SetMapIndex(reflect.ValueOf("x"), e)
			})
		})
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		forLeaves(t.Elem(), path+"[0]", func(p string, set func(reflect.Value)) {
			each(p, func(v reflect.Value) {
				s := reflect.MakeSlice(t, 1, 1)
				set(s.Index(0))
				v.Set(s)
			})
		})
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Bool:
		for _, b := range []bool{true, false} {
			each(fmt.Sprintf("%s=%v", path, b), func(v reflect.Value) { v.Set(reflect.ValueOf(&b)) })
		}
	default:
		each(path, func(v reflect.Value) { v.Set(nonZero(t)) })
	}
}

func nonZero(t reflect.Type) reflect.Value {
	v := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(1)
	case reflect.Float64:
		v.SetFloat(1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(t, 1, 1))
		v.Index(0).Set(nonZero(t.Elem()))
	case reflect.Map:
		v.Set(reflect.MakeMap(t))
		v.SetMapIndex(reflect.ValueOf("k"), nonZero(t.Elem()))
	case reflect.Pointer:
		v.Set(reflect.New(t.Elem()))
		v.Elem().Set(nonZero(t.Elem()))
	case reflect.Interface:
		v.Set(reflect.ValueOf("x"))
	case reflect.Struct:
	default:
		panic("nonZero: no value for " + t.String())
	}
	return v
}

// Every key of a file either applies untrusted, unchanged, or is reported
// as needing trust: a key added to Config later cannot slip through Split
// unreported, nor be dropped silently.
func TestSplitCoversEveryKey(t *testing.T) {
	cases := oneKey()
	if len(cases) < 40 {
		t.Fatalf("only %d keys walked; the walker misses some", len(cases))
	}
	for path, c := range cases {
		n, ws := c.Split()
		if len(ws) == 0 && !reflect.DeepEqual(n, c) {
			t.Errorf("%s: dropped without being reported:\n got %+v\nwant %+v", path, n, c)
		}
		if len(ws) > 0 && reflect.DeepEqual(n, c) {
			t.Errorf("%s: reported (%v) and kept", path, ws)
		}
	}
}

// What can start a program or widen what is allowed is reported and left
// out; what can only narrow applies untrusted.
func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		file  string
		wants []string // the widenings, in order; none means it applies whole
	}{
		{`[tools.lint]
command = ["sh", "lint.sh"]`, []string{`x.toml:1: tools.lint.command: starts the program ["sh" "lint.sh"], a local tool`}},
		{`[tools.fmt]
command = ["./fmt"]
runtime = "vfs"
read = ["src/**"]
net = ["api.example.com:443"]

[toolsets.conf]
command = ["./conf"]
write = ["out/"]`, []string{
			`x.toml:1: tools.fmt.command: starts the program ["./fmt"], a local tool`,
			`x.toml:1: tools.fmt.read: lets a confined tool (vfs, wasm) read src/** through lathe's host API`,
			`x.toml:1: tools.fmt.net: lets a confined tool (vfs, wasm) fetch from api.example.com:443 through lathe's host API`,
			`x.toml:7: toolsets.conf.command: starts the program ["./conf"]`,
			`x.toml:7: toolsets.conf.write: lets a confined tool (vfs, wasm) write and remove out/ through lathe's host API`,
		}},
		{`[tools.p]
command = ["echo {x}"]
shell = true
parameters.x = { type = "string" }`, []string{`tools.p.command: starts the program ["echo {x}"] with /bin/sh`}},
		{`[tools.sdk_greet]
env = ["AWS_SECRET_ACCESS_KEY"]`, []string{"tools.sdk_greet.env: changes how the local tool runs"}},
		{`[toolsets.kit]
command = ["./kit"]`, []string{`toolsets.kit.command: starts the program ["./kit"]`}},
		{`[mcp.gh]
command = ["npx", "server"]`, []string{`mcp.gh.command: starts the program ["npx" "server"], an MCP server`}},
		{`[mcp.remote]
url = "https://example.invalid/mcp"
headers = { Authorization = "Bearer ${GITHUB_TOKEN}" }`, []string{`mcp.remote.url: connects to the MCP server at "https://example.invalid/mcp"`, "mcp.remote.headers"}},
		{`[[policy.rules]]
tool = "*"
approval = "allow"`, []string{`policy.rules: approval = "allow" for tool = "*" lets calls run without asking`}},
		{`[[policy.rules]]
tool = "*"
operation = "fetch"
approval = "allow"`, []string{`policy.rules: approval = "allow" for tool = "*", operation = "fetch" lets the tools' host operations run without asking`}},
		{`[tools.run_command]
profile = "dev"`, []string{"tools.run_command.profile: runs the tool under the dev sandbox profile"}},
		{`[tools.run_command]
profile = "standard"`, []string{"tools.run_command.profile"}},
		{`[tools.write_file]
enable = true`, []string{"tools.write_file.enable: turns the tool on"}},
		{`[tools.gh__env]
read_only = true
destructive = false
idempotent = true
open_world = false`, []string{"tools.gh__env.read_only: says the tool changes nothing", "tools.gh__env.destructive",
			"tools.gh__env.idempotent", "tools.gh__env.open_world"}},
		{`[mcp.gh]
approval = "allow"
trust_annotations = true`, []string{`mcp.gh.approval: approval = "allow" lets calls`, "mcp.gh.trust_annotations: takes the server's word"}},
		{`[sandbox]
profile = "dev"`, []string{"sandbox.profile"}},
		{`[sandbox.permissions]
write = ["/"]`, []string{"sandbox.permissions.write"}},
		{`[sandbox.limits]
memory = 1`, []string{"sandbox.limits.memory"}},
		{`[audit]
path = "/tmp/forged.db"`, []string{"audit.path"}},
		{`[audit]
enable = false`, []string{"audit.enable"}},
		{`[audit]
redact_values = [".*"]`, []string{"audit.redact_values"}},
		{`[telemetry]
arguments = true
results = true`, []string{"telemetry.arguments", "telemetry.results"}},
		// Narrowing only.
		{`[tools.write_file]
enable = false
summary = "s"
description = "d"
timeout = "1s"
concurrency = "exclusive"
max_concurrency = 1
profile = "hardened"
read_only = false
destructive = true
idempotent = false
open_world = true

[toolsets.kit]
enable = false

[mcp.gh]
enable = false
approval = "deny"
trust_annotations = false

[sandbox]
profile = "hardened"

[defaults]
timeout = "5s"

[batch]
max_concurrency = 2

[[policy.rules]]
tool = "edit_*"
approval = "deny"

[[policy.rules]]
tool = "read_file"
approval = "ask"`, nil},
	} {
		c, err := Parse("x.toml", []byte(tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		n, ws := c.Split()
		if len(ws) != len(tc.wants) {
			t.Errorf("%s:\nwidenings %v, want %d", tc.file, ws, len(tc.wants))
			continue
		}
		for i, w := range tc.wants {
			if !strings.Contains(ws[i].String(), w) {
				t.Errorf("%s:\nwidening %d is %q, want it to contain %q", tc.file, i, ws[i], w)
			}
		}
		if len(tc.wants) == 0 && !reflect.DeepEqual(n, c) {
			t.Errorf("%s: a narrowing file was changed:\n got %+v\nwant %+v", tc.file, n, c)
		}
		if len(tc.wants) > 0 {
			if len(n.MCP)+len(n.Toolsets) > 0 || n.Tools["lint"] != nil || n.Tools["p"] != nil || n.Tools["sdk_greet"] != nil ||
				n.Audit.Path != "" || n.Audit.Enable != nil || n.Audit.RedactValues != nil || len(n.Policy.Rules) > 0 ||
				n.Sandbox.Profile != "" || len(n.Sandbox.Permissions.Write) > 0 || n.Sandbox.Limits.Memory != 0 ||
				n.Telemetry != (Telemetry{}) {
				t.Errorf("%s: the widening part was kept: %+v", tc.file, n)
			}
			if rc := n.Tools["run_command"]; rc != nil && rc.Profile != "" {
				t.Errorf("%s: the profile was kept", tc.file)
			}
			if wf := n.Tools["write_file"]; wf != nil && wf.Enable != nil {
				t.Errorf("%s: enable = true was kept", tc.file)
			}
		}
	}
}

func sources(t *testing.T, user, ws string) []*Source {
	t.Helper()
	var srcs []*Source
	for _, f := range []struct {
		name, text string
		user       bool
	}{{"user.toml", user, true}, {"lathe.toml", ws, false}} {
		c, err := Parse(f.name, []byte(f.text))
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, &Source{Name: f.name, Data: []byte(f.text), Config: c, User: f.user})
	}
	return srcs
}

const (
	userRules = `[[policy.rules]]
tool = "run_command"
approval = "deny"

[tools.mine]
command = ["mine"]
parameters = {}
`
	wsRules = `[[policy.rules]]
tool = "*"
approval = "allow"

[[policy.rules]]
tool = "edit_file"
approval = "deny"

[tools.lint]
command = ["lint"]
parameters = {}
`
)

// Untrusted, a workspace's deny rule joins the user's rules rather than
// replacing them, its allow rule and its tool are left out, and the user's
// own tool stays.
func TestDecideUntrusted(t *testing.T) {
	srcs := sources(t, userRules, wsRules)
	var asked [][]byte
	cfg, pending, err := Decide(srcs, func(s *Source) (bool, error) {
		if s.User {
			t.Error("the user's file was checked for trust")
		}
		asked = append(asked, s.Data)
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || string(asked[0]) != wsRules {
		t.Errorf("trust was asked about %q, want the workspace file's bytes", asked)
	}
	var rules []string
	for _, r := range cfg.Policy.Rules {
		rules = append(rules, r.Tool+"="+string(r.Approval))
	}
	if got := strings.Join(rules, " "); got != "run_command=deny edit_file=deny" {
		t.Errorf("rules %q, want the user's deny and the workspace's deny", got)
	}
	if cfg.Tools["mine"] == nil || !cfg.Tools["mine"].IsLocal() {
		t.Error("the user's local tool was dropped")
	}
	if cfg.Tools["lint"] != nil {
		t.Error("the untrusted local tool was kept")
	}
	if len(pending) != 1 || pending[0].Source != srcs[1] || len(pending[0].Widenings) != 2 {
		t.Errorf("pending %+v, want the workspace file with its allow rule and its tool", pending)
	}
}

// Trusted, the workspace file applies as written: its rules replace the
// user's.
func TestDecideTrusted(t *testing.T) {
	srcs := sources(t, userRules, wsRules)
	cfg, pending, err := Decide(srcs, func(*Source) (bool, error) { return true, nil })
	if err != nil || len(pending) != 0 {
		t.Fatalf("Decide: %v %v", pending, err)
	}
	if len(cfg.Policy.Rules) != 2 || cfg.Policy.Rules[0].Approval != "allow" {
		t.Errorf("rules %+v, want the workspace's two", cfg.Policy.Rules)
	}
	if cfg.Tools["lint"] == nil || cfg.Tools["mine"] == nil {
		t.Error("a tool is missing")
	}
	// An error of the store is an error, never trust.
	boom := errors.New("corrupt record")
	if _, _, err := Decide(srcs, func(*Source) (bool, error) { return true, boom }); !errors.Is(err, boom) {
		t.Errorf("Decide with a failing store: %v, want the store's error", err)
	}
}

// A file that only narrows needs no trust and asks for none.
func TestDecideNarrowOnly(t *testing.T) {
	srcs := sources(t, "", "[tools.write_file]\nenable = false\n")
	cfg, pending, err := Decide(srcs, func(*Source) (bool, error) {
		t.Error("trust was asked about a file that only narrows")
		return false, nil
	})
	if err != nil || len(pending) != 0 || cfg.Tools["write_file"] == nil || *cfg.Tools["write_file"].Enable {
		t.Fatalf("Decide: %+v %v %v", cfg, pending, err)
	}
}

// The bytes checked are the bytes parsed: a file replaced after it was
// read changes neither what was checked nor what applies.
func TestReadSourcesReadsOnce(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	ws := t.TempDir()
	p := filepath.Join(ws, WorkspaceFile)
	const trusted = "[tools.t]\ncommand = [\"good\"]\nparameters = {}\n"
	if err := os.WriteFile(p, []byte(trusted), 0o644); err != nil {
		t.Fatal(err)
	}
	srcs, err := ReadSources(ws, "")
	if err != nil {
		t.Fatal(err)
	}
	// Swapped between the read and the check.
	if err := os.WriteFile(p, []byte("[tools.t]\ncommand = [\"evil\"]\nparameters = {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Decide(srcs, func(s *Source) (bool, error) { return string(s.Data) == trusted, nil })
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Tools["t"].Command[0]; got != "good" {
		t.Errorf("the command is %q, want the one read and checked", got)
	}
	if len(srcs) != 1 || srcs[0].User || srcs[0].Name != p {
		t.Errorf("sources %+v", srcs)
	}
}

// A user file inside the workspace (the home directory as the workspace)
// is not the person's own: what runs in the workspace could have written
// it.
func TestUserFileInsideWorkspace(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	os.MkdirAll(filepath.Join(home, ".config", "lathe"), 0o755)
	if err := os.WriteFile(UserFile(), []byte("[tools.x]\nsummary = \"s\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srcs, err := ReadSources(home, "")
	if err != nil || len(srcs) != 1 {
		t.Fatal(srcs, err)
	}
	if srcs[0].User {
		t.Error("a user file inside the workspace counts as the user's own")
	}
	ws := t.TempDir()
	if srcs, err = ReadSources(ws, ""); err != nil || len(srcs) != 1 || !srcs[0].User {
		t.Errorf("a user file outside the workspace: %+v %v, want it the user's own", srcs, err)
	}
}

// A workspace that is not trusted cannot loosen what lathe makes of a
// server's tools: approval = "allow", trust_annotations = true and an effect
// said the trusting way are left out and named; said the cautious way they
// apply, onto the user's server of the same name.
func TestDecideServerTrust(t *testing.T) {
	const user = `[mcp.up]
command = ["up"]
`
	for _, tc := range []struct {
		ws      string
		widens  []string
		applies func(*Config) bool
	}{
		{"[mcp.up]\napproval = \"allow\"\n", []string{`mcp.up.approval: approval = "allow"`},
			func(c *Config) bool { return c.MCP["up"].Approval == "" }},
		{"[mcp.up]\ntrust_annotations = true\n", []string{"mcp.up.trust_annotations"},
			func(c *Config) bool { return c.MCP["up"].TrustAnnotations == nil }},
		{"[tools.up__environ]\nread_only = true\n", []string{"tools.up__environ.read_only"},
			func(c *Config) bool { return c.Tools["up__environ"] == nil || c.Tools["up__environ"].ReadOnly == nil }},
		{"[tools.up__environ]\ndestructive = false\nopen_world = false\nidempotent = true\n",
			[]string{"tools.up__environ.destructive", "tools.up__environ.idempotent", "tools.up__environ.open_world"},
			func(c *Config) bool {
				o := c.Tools["up__environ"]
				return o == nil || o.Destructive == nil && o.OpenWorld == nil && o.Idempotent == nil
			}},
		{"[mcp.up]\napproval = \"deny\"\ntrust_annotations = false\n", nil,
			func(c *Config) bool { return c.MCP["up"].Approval == "deny" && !*c.MCP["up"].TrustAnnotations }},
		{"[mcp.up]\napproval = \"ask\"\n", nil, func(c *Config) bool { return c.MCP["up"].Approval == "ask" }},
		{"[tools.up__environ]\nread_only = false\ndestructive = true\nopen_world = true\nidempotent = false\n", nil,
			func(c *Config) bool {
				o := c.Tools["up__environ"]
				return !*o.ReadOnly && *o.Destructive && *o.OpenWorld && !*o.Idempotent
			}},
		// A server the untrusted file defines itself is left out whole;
		// its narrowing keys are moot and make no server of their own.
		{"[mcp.other]\ncommand = [\"other\"]\napproval = \"deny\"\n", []string{"mcp.other.command"},
			func(c *Config) bool { return c.MCP["other"] == nil }},
	} {
		srcs := sources(t, user, tc.ws)
		cfg, pending, err := Decide(srcs, func(*Source) (bool, error) { return false, nil })
		if err != nil {
			t.Fatalf("%s: %v", tc.ws, err)
		}
		var got []string
		for _, p := range pending {
			for _, w := range p.Widenings {
				got = append(got, w.String())
			}
		}
		if len(got) != len(tc.widens) {
			t.Errorf("%s: left out %q, want %d", tc.ws, got, len(tc.widens))
		}
		for i, w := range tc.widens {
			if i < len(got) && !strings.Contains(got[i], w) {
				t.Errorf("%s: left out %q, want %q", tc.ws, got[i], w)
			}
		}
		if !tc.applies(cfg) {
			t.Errorf("%s: merged %+v (server %+v)", tc.ws, cfg, cfg.MCP["up"])
		}
		if _, err := cfg.MCPServers(func(string) (string, bool) { return "", false }); err != nil {
			t.Errorf("%s: the merged servers: %v", tc.ws, err)
		}
	}
}

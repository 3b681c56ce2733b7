package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/lathe-tools/lathe/internal/cli"
	"github.com/lathe-tools/lathe/internal/mcptest"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"lathe": func() { os.Exit(cli.Main()) },
		// lathe-test is lathe with tools that misbehave on purpose.
		"lathe-test": func() { os.Exit(cli.MainWith(testTools()...)) },
		// lathe-sdk-tool is a local tool built with the SDK (local_test.go).
		"lathe-sdk-tool": sdkTool,
		// lathe-test-mcp is an upstream MCP server (mcptest.ServeEnv).
		"lathe-test-mcp": func() { mcptest.ServeEnv("lathe-test-mcp") },
		// lathe-test-liar is an upstream MCP server that calls its env-dumping
		// tool read-only (mcptest.ServeLiar).
		"lathe-test-liar": func() { mcptest.ServeLiar("lathe-test-liar") },
	})
}

// testTools are tools that reach the failure paths the standard tools
// cannot: one that never finishes, one that panics, one that asks, one
// that takes its process down.
func testTools() []tool.Tool {
	return []tool.Tool{
		builtin.Must(builtin.Func(tool.Definition{Name: "slow", Summary: "Wait until cancelled."},
			func(ctx context.Context, _ struct{}) (string, error) {
				fmt.Fprintln(os.Stderr, "slow: started")
				<-ctx.Done()
				return "", ctx.Err()
			})),
		builtin.Must(builtin.Func(tool.Definition{Name: "boom", Summary: "Panic."},
			func(context.Context, struct{}) (string, error) { panic("boom goes the tool") })),
		builtin.Must(builtin.Func(tool.Definition{Name: "confirm", Summary: "Ask before saying hello."},
			func(ctx context.Context, in struct {
				Name string `json:"name"`
			}) (string, error) {
				a, err := builtin.Ask(ctx, tool.Question{ID: "sure", Text: "Greet " + in.Name + "?", Kind: tool.QuestionBoolean})
				if err != nil {
					return "", err
				}
				if !builtin.AnswerBool(a) {
					return "", errors.New("not greeting " + in.Name)
				}
				return "hello, " + in.Name, nil
			})),
		// deploy asks two questions, one after the other: a select, then
		// a confirmation, so that a batch must carry the first answer
		// into the run that answers the second.
		builtin.Must(builtin.Func(tool.Definition{Name: "deploy", Summary: "Ask where, then whether, to deploy."},
			func(ctx context.Context, _ struct{}) (string, error) {
				env, err := builtin.Ask(ctx, tool.Question{ID: "env", Text: "Where to?", Kind: tool.QuestionSelect,
					Options: []string{"staging", "prod"}})
				if err != nil {
					return "", err
				}
				sure, err := builtin.Ask(ctx, tool.Question{ID: "sure", Text: fmt.Sprintf("Deploy to %v?", env), Kind: tool.QuestionBoolean})
				if err != nil {
					return "", err
				}
				if !builtin.AnswerBool(sure) {
					return "", errors.New("not deploying")
				}
				return fmt.Sprintf("deployed to %v", env), nil
			})),
		// crash stands for a process that dies in the middle of a call.
		builtin.Must(builtin.Func(tool.Definition{Name: "crash", Summary: "Exit the process mid-call."},
			func(context.Context, struct{}) (string, error) { os.Exit(3); return "", nil })),
	}
}

// TestScripts runs the scripts in testdata/script. Beyond testscript's own
// commands they have:
//
//	exits N CMD ARGS...   run CMD and check that it exits with code N
//	sleep DURATION        wait, e.g. for a background command to start
//	forgegrant DB TOOL [COMMAND]   write an "always" grant into a database (forge_test.go)
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		// Scripts that test a file beside the workspace write ../outside.txt,
		// into the directory that holds every script's work directory;
		// testscript removes its own such directory only when it is empty.
		// A test's directory is removed whatever it holds.
		WorkdirRoot: t.TempDir(),
		Setup: func(env *testscript.Env) error {
			// Keep the user's own configuration out of the scripts.
			env.Setenv("XDG_CONFIG_HOME", env.WorkDir+"/.config")
			env.Setenv("HOME", env.WorkDir)
			// Trust records go outside the workspace, as in real use: a
			// store inside it is refused (trust*.txtar tests that too).
			state, err := os.MkdirTemp("", "lathe-state-")
			if err != nil {
				return err
			}
			env.Defer(func() { os.RemoveAll(state) })
			env.Setenv("XDG_STATE_HOME", state)
			// So does the cache of MCP servers' tool lists, which is
			// refused inside the workspace too.
			cache, err := os.MkdirTemp("", "lathe-cache-")
			if err != nil {
				return err
			}
			env.Defer(func() { os.RemoveAll(cache) })
			env.Setenv("XDG_CACHE_HOME", cache)
			// The reference MCP servers, for mcp*.txtar and serve*.txtar.
			env.Setenv("MCP_NODE_MODULES", mcptest.NodeModules())
			return nil
		},
		// [mcpservers]: the reference MCP servers are installed (.ci/run does).
		// [cpucgroup]: the machine has the cpu cgroup controller (v1 or v2)
		// and the tests run as root, who can create groups in it.
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "mcpservers":
				return mcptest.Installed(), nil
			case "cpucgroup":
				if os.Geteuid() != 0 {
					return false, nil
				}
				for _, f := range []string{"/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cgroup.controllers"} {
					if _, err := os.Stat(f); err == nil {
						return true, nil
					}
				}
				return false, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":      exits,
			"forgegrant": forgeGrant,
			"sleep": func(ts *testscript.TestScript, neg bool, args []string) {
				d, err := time.ParseDuration(args[0])
				if neg || len(args) != 1 || err != nil {
					ts.Fatalf("usage: sleep DURATION")
				}
				time.Sleep(d)
			},
		},
	})
}

func exits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits N CMD ARGS...")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: %v", err)
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

// Package cli implements the lathe command. Main is the whole program; its
// streams and arguments are injectable so that tests drive it in-process or
// as a subprocess (cmd/lathe/testdata/script).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/tool"
)

// Version is set at build time with -ldflags "-X …/internal/cli.Version=v1.2.3";
// without it, the module version from the build info is used.
var Version = ""

// Streams are a command's standard streams.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// Main runs lathe with the process's arguments and streams and returns the
// exit code.
func Main() int { return MainWith() }

// MainWith is [Main] with builtin tools of the caller's registered beside
// the standard ones. Programs outside lathe reach it as the public cli.Main;
// the CLI tests add tools that sleep, panic or ask with it.
func MainWith(extra ...tool.Tool) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, os.Args[1:], Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, extra...)
}

// Run runs lathe with args and returns the exit code.
func Run(ctx context.Context, args []string, s Streams, extra ...tool.Tool) int {
	root, g := newRoot(s, extra)
	// Deferred first, so that it runs last: the spans of the calls the
	// closing workspaces end are exported too.
	defer g.closeTelemetry()
	defer g.closeWorkspaces()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var silent *silentError
	if !errors.As(err, &silent) {
		fmt.Fprintln(s.Err, "lathe:", err)
	}
	code := exitCode(err)
	if code == ExitInternalFailure && isCobraUsage(err) {
		code = ExitUsage
	}
	return code
}

// silentError carries an exit code for a failure already reported to the
// user (an error result printed by `call`).
type silentError struct{ err error }

func (e *silentError) Error() string { return e.err.Error() }
func (e *silentError) Unwrap() error { return e.err }

// globals are the flags every command takes.
type globals struct {
	workspace string
	config    string
	streams   Streams
	extra     []tool.Tool // registered beside the standard tools

	// approver is asked when the policy says ask (see policy.go); nil
	// means there is no one to ask, and ask means deny.
	approver policy.Approver
	// fallback answers when the caller of a call cannot (lathe serve
	// --http: a person at the HTTP API), and middleware are stages run
	// before the policy (see serve.go).
	fallback   policy.Approver
	middleware []lathe.Middleware
	// hooks answer what an upstream server asks when the call brings no
	// hooks of its own: on a terminal, the person (see mcp.go).
	hooks tool.Hooks
	// verbose sends lathe's log to standard error (see engine.go).
	verbose bool
	// need names the tools a command will call, when it knows them:
	// upstream servers that cannot hold them are not started (see
	// load.Options.Need). longLived says the command serves until
	// stopped, so idle upstream servers are pinged. refresh lists every
	// upstream server's tools anew, whatever the cache holds.
	need      []string
	longLived bool
	refresh   bool
	// serving names the queue lathe worker serves (load.Options.Serving);
	// temporal holds its flags, which also reach the server of routed
	// tools.
	serving  string
	temporal temporalFlags

	mu     sync.Mutex
	opened []*load.Workspace // closed when the command ends
	// tel is the command's telemetry, from the OTEL_* variables, made
	// when the first workspace opens; metrics says the command serves
	// /metrics (see telemetry.go).
	tel     Telemetry
	telMade bool
	metrics bool

	// trust says what openEngine does with a workspace configuration
	// that needs a person's trust and lacks it (see trust.go).
	trust trustMode
}

func newRoot(s Streams, extra []tool.Tool) (*cobra.Command, *globals) {
	g := &globals{streams: s, extra: extra, hooks: terminalHooks(s)}
	root := &cobra.Command{
		Use:           "lathe",
		Short:         "Run tools for LLM agents",
		Long:          rootLong(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.PersistentFlags().StringVar(&g.workspace, "workspace", "", "workspace root (default: the nearest directory up from the current one that holds lathe.toml or .git, else the current one)")
	root.PersistentFlags().StringVar(&g.config, "config", "", "configuration file to use instead of WORKSPACE/lathe.toml")
	root.PersistentFlags().BoolVar(&g.verbose, "verbose", false, "write lathe's log (call records, tools' standard error, MCP servers' messages) to standard error; also LATHE_LOG=debug")
	root.AddCommand(newListCmd(g), newDescribeCmd(g), newCallCmd(g), newVersionCmd(g))
	root.AddCommand(newBatchCmd(g))
	root.AddCommand(newServeCmd(g))
	root.AddCommand(newWorkerCmd(g))
	root.AddCommand(newCacheCmd(g))
	root.AddCommand(newAuditCmd(g))
	root.AddCommand(newTrustCmd(g))
	root.AddCommand(newToolsCmd(g))
	root.AddCommand(newAuthCmd(g))
	root.AddCommand(newConfigCmd(g), newPolicyCmd(g))
	return root, g
}

// isCobraUsage reports the error cobra raises for an unknown command, which
// carries no type of its own.
func isCobraUsage(err error) bool {
	return strings.HasPrefix(err.Error(), "unknown command")
}

// usage wraps a cobra argument check so that its failures exit with [ExitUsage].
func usage(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &usageError{err}
		}
		return nil
	}
}

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print lathe's version",
		Args:  usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(g.streams.Out, "lathe", version())
			return nil
		},
	}
}

func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

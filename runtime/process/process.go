// Package process runs tools as subprocesses.
//
// A tool that speaks lathe's process protocol (the project's
// docs/protocol.md; the wire types are in package [protocol]) reads one JSON
// request on standard input and writes one JSON answer on standard output:
//
//	rt, err := process.New(process.Command{Argv: []string{"./tools/weather"}, Dir: root}, process.Options{})
//	e.Register(tool.Tool{Definition: def, Runtime: rt})
//
// Any language will do; the Go SDK (package sdk) does the protocol for Go
// tools. A tool that writes plain text instead of an answer and exits with
// status 0 gives a text result, so a simple script needs no JSON at all.
//
// A plain command-line program becomes a tool through placeholders in its
// command: ["git", "log", "-n", "{count}", "--", "{path}"]. Each placeholder
// is replaced by the argument's value, and each element stays exactly one
// element of the command line: no shell ever sees the values, so an argument
// "; rm -rf ~" is one harmless string. A shell runs only when
// [Command].Shell is set, and even then the values reach it as positional
// parameters, never as code.
//
// Every call runs in a session and process group of its own, in the
// workspace root, with a minimal environment ([DefaultEnv] plus the names
// the command lists). When the call's context ends, the group gets SIGTERM,
// and after [Options].GracePeriod the tool and everything it started are
// killed; when the tool's main process exits, whatever it left running is
// killed. Standard output is capped ([Options].MaxOutputBytes): past the cap
// the tool is killed and the call fails. Standard error is for logs; its
// tail goes into failures.
//
// [Start] is that way of starting a process, and lathe's only one: process
// tools, run_command (package tools/command) and the commands of MCP
// servers all start through it. A library user who writes a runtime of his
// own starts its processes with it too, and builds their environment with
// [Env], so that they follow the same rules.
//
// [Describe] and [Cache] ask a binary for the definitions of its tools,
// with the same [Options], sandbox included, as its calls.
package process

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lathe-tools/lathe/internal/tail"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lathe-tools/lathe/internal/childenv"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/tool"
)

// RuntimeName is the name of this runtime in definitions and errors.
const RuntimeName = "process"

// Defaults for the zero fields of [Options].
const (
	DefaultMaxOutputBytes = 16 << 20
	DefaultGracePeriod    = 2 * time.Second
)

// DefaultEnv returns the names of the variables every tool's process
// receives from lathe's own environment: PATH, HOME, LANG, TERM and TMPDIR,
// the base every process lathe starts gets. Nothing else passes unless the
// command lists it, so a tool does not see the tokens and keys of the
// user's shell by accident. A sandbox sets HOME and TMPDIR of its own.
func DefaultEnv() []string { return childenv.Base() }

// Command says how to start a tool's process.
type Command struct {
	// Argv is the program and its arguments. Elements may hold {name}
	// placeholders, each replaced by the call's argument of that name (see
	// the package documentation). A command without placeholders speaks the
	// protocol: it gets the request on standard input.
	//
	// A relative program path with a slash ("./bin/tool") is taken from
	// Dir; a bare name is looked up in PATH.
	Argv []string
	// Shell runs Argv[0], then the only element, as a script of /bin/sh.
	Shell bool
	// Dir is the working directory of the process, the workspace root. It
	// is also the root the request tells the tool. Empty means lathe's own
	// working directory.
	Dir string
	// Env names variables passed through from lathe's environment besides
	// those of [DefaultEnv].
	Env []string
}

// Placeholders returns the names of the placeholders in the command, in the
// order they first appear, or an error if the command cannot be parsed.
func (c Command) Placeholders() ([]string, error) {
	t, err := parseTemplate(c.Argv, c.Shell)
	if err != nil {
		return nil, err
	}
	return t.names, nil
}

// Options configure a [Runtime]. The zero value is ready to use.
type Options struct {
	// Tool is the name the binary knows the tool by, sent in each request.
	// Empty means the name of the definition being executed.
	Tool string
	// Options are passed to the tool in each request's context.
	Options map[string]any
	// MaxOutputBytes caps what the tool may write to standard output; past
	// it, the process group is killed and the call fails. Zero means
	// [DefaultMaxOutputBytes].
	MaxOutputBytes int
	// GracePeriod is how long a stopped tool has, after SIGTERM, before
	// SIGKILL. Zero means [DefaultGracePeriod].
	GracePeriod time.Duration
	// Sandbox, when set, is called with each call's command just before it
	// starts and may rewrite it to run isolated; the function it returns
	// runs once the process is gone. Pass a sandbox.Config's Wrap method.
	// A Sandbox error fails the call: the command never runs unconfined.
	// [Describe] given the same Options confines discovery alike.
	Sandbox func(cmd *exec.Cmd) (cleanup func(), err error)
	// Logger receives the tail of each call's standard error, at debug level
	// (warn when the call failed). Nil discards it.
	Logger *slog.Logger
	// MergeStderr sends standard error to standard output, interleaved as
	// the process writes them, for a command whose diagnostics are part of
	// its result (a shell command line, a compiler). The result of a
	// failing command with placeholders then shows all of its output, up to
	// MaxOutputBytes, rather than the tails of the two.
	MergeStderr bool
}

// ErrOutputLimit is wrapped by the error of a call whose tool wrote more
// than [Options].MaxOutputBytes to standard output and was stopped.
var ErrOutputLimit = errors.New("the output limit was passed")

// Runtime runs one tool as a subprocess per call. Its methods are safe for
// concurrent use.
type Runtime struct {
	cmd  Command
	opts Options
	// tmpl is nil for a protocol tool, whose command has no placeholders.
	tmpl    *template
	script  string // the expanded script, for a shell command
	path    string // the program, resolved; "" if it was not found
	pathErr error
	env     []string

	closing context.Context // done once Close is called
	close   context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	closed  bool
}

var (
	_ tool.Runtime     = (*Runtime)(nil)
	_ tool.Closer      = (*Runtime)(nil)
	_ tool.Cooperative = (*Runtime)(nil)
)

// Cooperative reports true: when its context ends, Execute returns as soon
// as the tool's process group is gone, at most a grace period later. The
// engine then runs the call on the caller's goroutine, and a call that has
// returned has nothing left running, which a batch relies on before it
// starts a call that conflicts with it.
func (r *Runtime) Cooperative() bool { return true }

// New returns a runtime for cmd. It checks the command's form; a program that
// cannot be found is reported by each call rather than here, so that one
// missing binary does not stop the others from loading.
func New(cmd Command, opts Options) (*Runtime, error) {
	if len(cmd.Argv) == 0 || cmd.Argv[0] == "" {
		return nil, errors.New("process: the command is empty")
	}
	t, err := parseTemplate(cmd.Argv, cmd.Shell)
	if err != nil {
		return nil, fmt.Errorf("process: %w", err)
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if opts.GracePeriod <= 0 {
		opts.GracePeriod = DefaultGracePeriod
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Runtime{cmd: cmd, opts: opts, env: childenv.Build(cmd.Env, nil)}
	r.closing, r.close = context.WithCancel(context.Background())
	switch {
	case cmd.Shell:
		r.tmpl = t
		r.script, _ = t.script() // checked by parseTemplate
		r.path = "/bin/sh"
	case len(t.names) > 0:
		if t.elems[0].vars {
			return nil, fmt.Errorf("process: the program %q cannot hold a placeholder", cmd.Argv[0])
		}
		r.tmpl = t
		r.path, r.pathErr = resolve(cmd.Argv[0], cmd.Dir)
	default:
		r.path, r.pathErr = resolve(cmd.Argv[0], cmd.Dir)
	}
	return r, nil
}

// resolve finds the program: a path with a slash relative to dir, a bare
// name in PATH.
func resolve(prog, dir string) (string, error) {
	if strings.ContainsRune(prog, '/') {
		if !filepath.IsAbs(prog) {
			prog = filepath.Join(dir, prog)
			if !filepath.IsAbs(prog) {
				abs, err := filepath.Abs(prog)
				if err != nil {
					return "", err
				}
				prog = abs
			}
		}
		fi, err := os.Stat(prog)
		switch {
		case err != nil:
			return "", fmt.Errorf("the program %s does not exist", prog)
		case fi.IsDir():
			return "", fmt.Errorf("the program %s is a directory", prog)
		case fi.Mode()&0o111 == 0:
			return "", fmt.Errorf("the program %s is not executable (chmod +x, or run it through its interpreter)", prog)
		}
		return prog, nil
	}
	p, err := exec.LookPath(prog)
	if err != nil {
		return "", fmt.Errorf("the program %q is not in PATH", prog)
	}
	return p, nil
}

// Program returns the resolved path of the program, or an error saying why
// it was not found.
func (r *Runtime) Program() (string, error) { return r.path, r.pathErr }

// Execute runs the tool once. A protocol tool gets the request on standard
// input; a command with placeholders gets its arguments on the command line
// and nothing on standard input.
func (r *Runtime) Execute(ctx context.Context, def *tool.Definition, call *tool.Call) (*tool.Outcome, error) {
	if r.tmpl != nil {
		argv, err := r.argv(call.Arguments)
		if err != nil {
			return nil, r.fail(def, "decode", "arguments do not decode", err)
		}
		res, err := r.run(ctx, def, argv, nil)
		if err != nil {
			return nil, err
		}
		return r.plainOutcome(def, res)
	}
	req, err := r.request(def, protocol.ActionRun, call)
	if err != nil {
		return nil, err
	}
	res, err := r.run(ctx, def, r.cmd.Argv, req)
	if err != nil {
		return nil, err
	}
	return r.protocolOutcome(def, res)
}

var _ tool.ArgumentFormatter = (*Runtime)(nil)

// FormatArguments returns a short human-readable form of a call's
// arguments, for a prompt or a log: what a protocol tool answers to the
// format_arguments action, or the command line that a command with
// placeholders would run. It makes the runtime a [tool.ArgumentFormatter].
func (r *Runtime) FormatArguments(ctx context.Context, def *tool.Definition, call *tool.Call) (string, error) {
	if r.tmpl != nil {
		argv, err := r.argv(call.Arguments)
		if err != nil {
			return "", r.fail(def, "decode", "arguments do not decode", err)
		}
		if r.cmd.Shell {
			argv = append([]string{r.script}, argv...)
		}
		quoted := make([]string, len(argv))
		for i, a := range argv {
			quoted[i] = shellQuote(a)
		}
		return strings.Join(quoted, " "), nil
	}
	req, err := r.request(def, protocol.ActionFormatArguments, call)
	if err != nil {
		return "", err
	}
	res, err := r.run(ctx, def, r.cmd.Argv, req)
	if err != nil {
		return "", err
	}
	out, err := r.protocolOutcome(def, res)
	if err != nil {
		return "", err
	}
	if out.Result == nil || out.Result.IsError {
		return "", fmt.Errorf("%s: format_arguments did not succeed: %v", def.Name, out.Err())
	}
	return out.Result.Text(), nil
}

// Close stops the calls in flight, as a cancellation would, and waits until
// their processes are gone. Later calls fail.
func (r *Runtime) Close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.close()
	r.wg.Wait()
	return nil
}

func (r *Runtime) toolName(def *tool.Definition) string {
	if r.opts.Tool != "" {
		return r.opts.Tool
	}
	return def.Name
}

func (r *Runtime) request(def *tool.Definition, action protocol.Action, call *tool.Call) ([]byte, error) {
	req, err := protocol.NewRequest(&protocol.Request{
		Action:    action,
		Tool:      r.toolName(def),
		Arguments: call.Arguments,
		Answers:   call.Answers,
		Context:   protocol.Context{Root: r.cmd.Dir, CallID: call.ID, Options: r.opts.Options},
	})
	if err != nil {
		return nil, r.fail(def, "encode", "cannot encode the request", err)
	}
	return req, nil
}

// argv expands the command line of a command with placeholders.
func (r *Runtime) argv(raw json.RawMessage) ([]string, error) {
	args := map[string]any{}
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&args); err != nil {
			return nil, err
		}
	}
	vals := r.tmpl.expand(args)
	if r.cmd.Shell {
		// sh -c SCRIPT NAME ARGS…: NAME becomes $0, ARGS $1….
		return append([]string{"sh", "-c", r.script, "lathe-tool"}, vals...), nil
	}
	return vals, nil
}

func (r *Runtime) fail(def *tool.Definition, stage, msg string, err error) *tool.Error {
	return &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: RuntimeName, Stage: stage, Message: msg, Err: err}
}

// result is what one run of a process left behind.
type result struct {
	stdout   []byte
	stderr   []byte // the tail
	state    *os.ProcessState
	overflow bool
}

// exitText says how the process ended: "exit status 2", "signal: killed".
func (res *result) exitText() string {
	if res.state == nil {
		return "it did not start"
	}
	return res.state.String()
}

// run starts the process, waits for it and its group, and returns what it
// wrote. The error is a context error when ctx ended first, a
// [*tool.Error] otherwise.
func (r *Runtime) run(ctx context.Context, def *tool.Definition, argv []string, stdin []byte) (*result, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: RuntimeName, Stage: "execute",
			Message: "the runtime is closed"}
	}
	r.wg.Add(1)
	r.mu.Unlock()
	defer r.wg.Done()
	if r.pathErr != nil {
		return nil, r.fail(def, "start", "cannot start the tool", r.pathErr)
	}

	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(r.closing, cancel)
	defer stop()

	res, err := spawn(callCtx, spawnSpec{
		path: r.path, argv: argv, dir: r.cmd.Dir, env: r.env, stdin: stdin,
		maxOut: r.opts.MaxOutputBytes, grace: r.opts.GracePeriod, sandbox: r.opts.Sandbox, merge: r.opts.MergeStderr,
	})
	if len(res.stderr) > 0 {
		r.log(ctx, def, res, err)
	}
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case callCtx.Err() != nil:
		return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: RuntimeName, Stage: "execute",
			Message: "the runtime was closed while the tool ran"}
	case err != nil:
		return nil, r.fail(def, "start", "cannot start the tool", err)
	case res.overflow:
		return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: RuntimeName, Stage: "execute",
			Message: fmt.Sprintf("the tool wrote more than %d bytes to standard output and was stopped", r.opts.MaxOutputBytes),
			Err:     ErrOutputLimit}
	}
	return res, nil
}

func (r *Runtime) log(ctx context.Context, def *tool.Definition, res *result, err error) {
	level := slog.LevelDebug
	if err != nil || res.overflow || res.state == nil || !res.state.Success() {
		level = slog.LevelWarn
	}
	if !r.opts.Logger.Enabled(ctx, level) {
		return
	}
	r.opts.Logger.LogAttrs(ctx, level, "tool stderr", slog.String("tool", def.Name),
		slog.String("exit", res.exitText()), slog.String("stderr", string(res.stderr)))
}

// protocolOutcome reads a protocol tool's answer. A protocol answer counts
// whatever the exit status; without one, plain output with status 0 is a
// text result and anything else a runtime failure.
func (r *Runtime) protocolOutcome(def *tool.Definition, res *result) (*tool.Outcome, error) {
	return protocol.Output{Stdout: res.stdout, OK: res.state.Success(), Exit: res.exitText(), Stderr: res.stderr,
		Tool: def.Name, Runtime: RuntimeName}.Outcome()
}

// plainOutcome reads the output of a command-line program: its standard
// output is the text; a failing exit status makes an error result, since
// the program ran and said it failed. A program that writes a protocol
// answer all the same (as JP's tools, which take their arguments on the
// command line, do) is read as one.
func (r *Runtime) plainOutcome(def *tool.Definition, res *result) (*tool.Outcome, error) {
	if ans, ok, err := protocol.ParseAnswer(res.stdout); ok && err == nil {
		if out, err := ans.Outcome(); err == nil {
			return out, nil
		}
	}
	if res.state.Success() {
		return &tool.Outcome{Result: tool.TextResult(tail.Text(res.stdout))}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the command failed (%s)", res.exitText())
	if out := strings.TrimRight(tail.Text(res.stdout), "\n"); out != "" && r.opts.MergeStderr {
		b.WriteString("\noutput:\n")
		b.WriteString(out)
	} else if out != "" {
		b.WriteString("\nstdout:\n")
		b.WriteString(tail.Last(out, tail.Shown))
	}
	b.WriteString(tail.StderrNote(res.stderr))
	return &tool.Outcome{Result: &tool.Result{
		Content: []tool.Content{{Type: tool.ContentText, Text: b.String()}},
		IsError: true, ErrorKind: tool.KindToolError,
	}}, nil
}

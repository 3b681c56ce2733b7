// Package vfs runs a tool as a confined process that reaches files, the
// network and other programs only by asking lathe: a VFS tool.
//
// The process runs under the standard sandbox profile (or hardened) with
// nothing of the host beyond what it needs to execute: the system
// directories ([sandbox.SystemPaths]), its own program and the files its
// command names (a script given to an interpreter), read-only; an empty
// private working directory instead of the workspace; no network; and an
// environment of PATH, LANG, TERM, HOME and TMPDIR only. Everything else it
// asks for over its standard input and output, as JSON-RPC requests of the
// host API (package [host], the project's docs/host.md), which lathe checks
// against the tool's permissions and the policy before it does them.
//
// The stdio carries two protocols:
//
//   - The first line on standard input is the process protocol's request
//     (the project's docs/protocol.md) with context.host set to
//     [host.Version].
//   - On standard output the tool writes host requests, one JSON-RPC object
//     per line (an object with "jsonrpc"); lathe writes each response as one
//     line on standard input, in the order they complete, so a tool may have
//     several requests in flight and must match responses by id.
//   - The first line that is a protocol answer (an object whose "type" is
//     success, error or needs_input) is the tool's answer, read as a process
//     tool's is, and ends the call. Without one, the tool's other output is
//     read as a process tool's output is.
//
// The call ends when the tool answers, when its process exits, or when its
// context ends: the host session ends with it (a later request gets
// [host.CodeEnded] and never runs, the requests in flight are cancelled),
// and the process group is killed as a process tool's is, with whatever it
// started. A line longer than [Options].MaxRequestBytes gets
// [host.CodeTooLarge] and fails the call; past [Options].MaxPending
// requests in flight, lathe reads no more of the tool's output until one is
// answered. The project's docs/host.md has the details.
//
//	rt, err := vfs.New(process.Command{Argv: []string{"./bin/mytool"}, Dir: root}, h, vfs.Options{})
//
// The Go SDK's host client (sdk.Host) speaks the tool's side.
package vfs

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lathe-tools/lathe/internal/tail"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/host/scope"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/sandbox"
	"github.com/lathe-tools/lathe/tool"
)

// RuntimeName is the name of this runtime in definitions and errors.
const RuntimeName = "vfs"

// Defaults for the zero fields of [Options].
const (
	// DefaultMaxRequestBytes holds the largest write the host takes
	// (host.DefaultLimits: 16 MiB, which base64 makes 21⅓ MiB) with room
	// for the JSON around it.
	DefaultMaxRequestBytes = 24 << 20
	DefaultMaxPending      = 64
	// DefaultMaxPendingBytes bounds the requests of one call being
	// answered at once by their size, so that MaxPending large writes do
	// not hold gigabytes.
	DefaultMaxPendingBytes = 64 << 20
	// DefaultMemory is the address space of a VFS tool's process when
	// Sandbox.Limits sets none, rather than the sandbox's default of a run:
	// a Go program, as the SDK builds, reserves address space it never
	// uses, RLIMIT_AS counts it, and under 1 GiB such a program now and
	// then fails to start a thread.
	DefaultMemory = 4 << 30
)

// Options configure a [Runtime]. The zero value is ready to use.
type Options struct {
	// Tool is the name the binary knows the tool by, sent in each request.
	// Empty means the name of the definition being executed.
	Tool string
	// Options are passed to the tool in each request's context.
	Options map[string]any
	// Sandbox is the profile and the limits of the tool's process. Its
	// Profile "" means [sandbox.Standard]; [sandbox.Dev] is refused, since
	// a host process could open any file itself. Its Workspace, Perms and
	// Hide are the runtime's own: the process gets no workspace, no network,
	// no variable beyond the base ones, and reads only its program and the
	// files its command names.
	Sandbox sandbox.Config
	// MaxOutputBytes caps what the tool may write to standard output
	// besides its host requests; past it, the process group is killed and
	// the call fails. Zero means [process.DefaultMaxOutputBytes].
	MaxOutputBytes int
	// MaxRequestBytes caps one line of standard output, a host request
	// above all; past it the request gets [host.CodeTooLarge] and the call
	// fails. Zero means [DefaultMaxRequestBytes].
	MaxRequestBytes int
	// MaxPending caps the host requests of one call being answered at
	// once; past it lathe reads no more of the tool's output until one is
	// answered. Zero means [DefaultMaxPending].
	MaxPending int
	// MaxPendingBytes caps the same by their size, in bytes: a request
	// that would pass it waits until the ones before it are answered (one
	// request alone always runs). Zero means [DefaultMaxPendingBytes].
	MaxPendingBytes int
	// GracePeriod is how long a stopped tool has, after SIGTERM, before
	// SIGKILL. Zero means [process.DefaultGracePeriod].
	GracePeriod time.Duration
	// Logger receives the tail of each call's standard error. Nil discards
	// it.
	Logger *slog.Logger
}

// ErrTooLarge is wrapped by the error of a call whose tool wrote a line
// longer than [Options].MaxRequestBytes.
var ErrTooLarge = errors.New("a line of the tool's output was over the request limit")

// passEnv names variables the tool's process receives besides the base
// ones; empty but for this package's tests, whose race-built tool reads
// GORACE.
var passEnv []string

// Runtime runs one VFS tool, a confined process per call. Its methods are
// safe for concurrent use.
type Runtime struct {
	host    *host.Host
	opts    Options
	dir     string
	argv    []string // the command, its file arguments made absolute
	path    string   // the program, resolved; "" when it was not found
	pathErr error
	files   []string // what the process may read besides the system paths
	box     sandbox.Config

	closing context.Context
	close   context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	closed  bool
}

var (
	_ tool.Runtime           = (*Runtime)(nil)
	_ tool.Closer            = (*Runtime)(nil)
	_ tool.Cooperative       = (*Runtime)(nil)
	_ tool.ArgumentFormatter = (*Runtime)(nil)
)

// New returns a runtime that runs cmd, answering its host requests with h.
// cmd.Dir is the workspace root, from which a relative program or file
// argument is taken; the process never sees it. cmd must speak the
// protocol: no placeholders, no shell, and no variables of its own (a VFS
// tool reads a variable through the host, env/get). A program that cannot
// be found is reported by each call, so that one missing binary does not
// stop the others from loading.
func New(cmd process.Command, h *host.Host, opts Options) (*Runtime, error) {
	if h == nil {
		return nil, errors.New("vfs: a VFS tool needs a host")
	}
	return newRuntime(cmd, h, opts)
}

func newRuntime(cmd process.Command, h *host.Host, opts Options) (*Runtime, error) {
	switch names, err := cmd.Placeholders(); {
	case len(cmd.Argv) == 0 || cmd.Argv[0] == "":
		return nil, errors.New("vfs: the command is empty")
	case err != nil:
		return nil, fmt.Errorf("vfs: %w", err)
	case cmd.Shell || len(names) > 0:
		return nil, errors.New("vfs: a VFS tool speaks the protocol: its command takes no placeholders and no shell")
	case len(cmd.Env) > 0:
		return nil, fmt.Errorf("vfs: a VFS tool's process gets no variables of its own (%s); it reads them through the host API (env/get), as its permissions allow",
			strings.Join(cmd.Env, ", "))
	}
	p, err := sandbox.ParseProfile(string(opts.Sandbox.Profile))
	if err != nil {
		return nil, fmt.Errorf("vfs: %w", err)
	}
	if p == sandbox.Dev {
		return nil, errors.New("vfs: a VFS tool cannot run under the dev profile: a host process opens any file of lathe's user itself, so the host API would confine nothing (use standard or hardened)")
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = process.DefaultMaxOutputBytes
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPending
	}
	if opts.MaxPendingBytes <= 0 {
		opts.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if opts.GracePeriod <= 0 {
		opts.GracePeriod = process.DefaultGracePeriod
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Runtime{host: h, opts: opts, dir: cmd.Dir}
	r.closing, r.close = context.WithCancel(context.Background())
	r.path, r.pathErr = program(cmd.Argv[0], cmd.Dir)
	if r.path != "" && !system(r.path) {
		r.files = append(r.files, r.path)
	}
	r.argv = append([]string{cmd.Argv[0]}, cmd.Argv[1:]...)
	for i, a := range r.argv[1:] {
		if f := fileArg(a, cmd.Dir); f != "" {
			r.argv[i+1] = f
			if !system(f) && !slices.Contains(r.files, f) {
				r.files = append(r.files, f)
			}
		}
	}
	if h != nil {
		if err := selfWritable(h, r.files); err != nil {
			return nil, err
		}
	}
	r.box = opts.Sandbox
	r.box.Profile = p
	if r.box.Limits.Memory == 0 {
		r.box.Limits.Memory = DefaultMemory
	}
	r.box.Workspace, r.box.Hide, r.box.NoWorkspace = "", nil, true
	r.box.Perms = sandbox.Permissions{Read: r.files, Env: passEnv}
	return r, nil
}

// program resolves the program: a path with a slash relative to dir, a bare
// name in PATH; then its links, since the process is given the file itself
// and not the directories on the way to it.
func program(prog, dir string) (string, error) {
	p := prog
	if strings.ContainsRune(prog, '/') {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
	} else {
		lp, err := exec.LookPath(prog)
		if err != nil {
			return "", fmt.Errorf("the program %q is not in PATH", prog)
		}
		p = lp
	}
	abs, err := filepath.Abs(p)
	if err == nil {
		p, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", fmt.Errorf("the program %s does not exist", prog)
	}
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return "", fmt.Errorf("the program %s does not exist", prog)
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("the program %s is not a regular file", prog)
	case fi.Mode()&0o111 == 0:
		return "", fmt.Errorf("the program %s is not executable (chmod +x, or run it through its interpreter)", prog)
	}
	return p, nil
}

// system reports whether the file p is in the system paths, which every
// sandboxed process reads already: binding it again, inside a read-only
// system directory, could not be done, and would give nothing.
func system(p string) bool {
	for _, d := range sandbox.SystemPaths() {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			d = real
		}
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// selfWritable refuses a tool whose own program or script lies in its
// write scope: through fs/write it could rewrite itself, and its next call
// would run code no one trusted, as the host refuses to run a program in
// that scope (proc/run).
func selfWritable(h *host.Host, files []string) error {
	ws := h.Workspace()
	for _, f := range files {
		rel, ok := strings.CutPrefix(f, ws+"/")
		if !ok {
			continue
		}
		for _, w := range h.Permissions().Write {
			if w == ws {
				w = "."
			} else if r, ok := strings.CutPrefix(w, ws+"/"); ok {
				w = cmp.Or(r, ".")
			}
			if pat, err := scope.CompilePath(w); err == nil && pat.Match(rel) {
				return fmt.Errorf("vfs: the tool's own file %s lies in its write scope (write = %q), so it could rewrite itself through the host and its next call would run what it wrote; keep its program and script out of write", rel, w)
			}
		}
	}
	return nil
}

// fileArg returns the real path of the regular file that argument a names
// (relative to dir, or absolute), or "" when it names none. Only regular
// files are given to the process: an argument naming a directory ("."
// above all) must not hand it the workspace.
func fileArg(a, dir string) string {
	if a == "" || strings.HasPrefix(a, "-") {
		return ""
	}
	p := a
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	p, err := filepath.Abs(p)
	if err != nil {
		return ""
	}
	if p, err = filepath.EvalSymlinks(p); err != nil {
		return ""
	}
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	return p
}

// Files returns the files the tool's process may read besides the system
// paths: its program and the files its command names, real paths, those
// outside the system paths.
func (r *Runtime) Files() []string { return append([]string(nil), r.files...) }

// Cooperative reports true: when its context ends, Execute returns as soon
// as the tool's process group is gone and its host requests have ended.
func (r *Runtime) Cooperative() bool { return true }

// Execute runs the tool once, answering its host requests.
func (r *Runtime) Execute(ctx context.Context, def *tool.Definition, call *tool.Call) (*tool.Outcome, error) {
	req, err := r.request(def, protocol.ActionRun, call)
	if err != nil {
		return nil, err
	}
	res, err := r.run(ctx, def, req, r.host)
	if err != nil {
		return nil, err
	}
	return res.outcome(def)
}

// FormatArguments asks the tool for a short human-readable form of a
// call's arguments (the format_arguments action). The tool gets no host
// session for it: rendering arguments reaches nothing.
func (r *Runtime) FormatArguments(ctx context.Context, def *tool.Definition, call *tool.Call) (string, error) {
	req, err := r.request(def, protocol.ActionFormatArguments, call)
	if err != nil {
		return "", err
	}
	res, err := r.run(ctx, def, req, nil)
	if err != nil {
		return "", err
	}
	out, err := res.outcome(def)
	if err != nil {
		return "", err
	}
	if out.Result == nil || out.Result.IsError {
		return "", fmt.Errorf("%s: format_arguments did not succeed: %v", def.Name, out.Err())
	}
	return out.Result.Text(), nil
}

// Describe runs cmd with the schema action, confined as its calls are
// under opts, and returns the definitions of the tools it holds. The tool
// gets no host session while it describes itself.
func Describe(ctx context.Context, cmd process.Command, opts Options) ([]protocol.ToolSchema, error) {
	r, err := newRuntime(cmd, nil, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	req, err := protocol.NewRequest(&protocol.Request{
		Action:  protocol.ActionSchema,
		Context: protocol.Context{Root: cmd.Dir, Options: opts.Options},
	})
	if err != nil {
		return nil, err
	}
	res, err := r.run(ctx, &tool.Definition{Name: "schema"}, req, nil)
	if err != nil {
		var te *tool.Error
		if errors.As(err, &te) && te.Err != nil {
			return nil, te.Err
		}
		return nil, err
	}
	return process.SchemaAnswer(res.rest, res.exitText(), res.stderr)
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

func (r *Runtime) request(def *tool.Definition, action protocol.Action, call *tool.Call) ([]byte, error) {
	name := r.opts.Tool
	if name == "" {
		name = def.Name
	}
	ctx := protocol.Context{Root: r.dir, CallID: call.ID, Options: r.opts.Options}
	if action == protocol.ActionRun {
		ctx.Host = host.Version
	}
	req, err := protocol.NewRequest(&protocol.Request{
		Action: action, Tool: name, Arguments: call.Arguments, Answers: call.Answers, Context: ctx,
	})
	if err != nil {
		return nil, fail(def, "encode", "cannot encode the request", err)
	}
	return req, nil
}

func fail(def *tool.Definition, stage, msg string, err error) *tool.Error {
	return &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: RuntimeName, Stage: stage, Message: msg, Err: err}
}

// sandbox confines one process: the runtime's own configuration, with the
// environment reduced to the base variables.
func (r *Runtime) sandbox(c *exec.Cmd) (func(), error) {
	c.Env = process.Env(passEnv, nil)
	return r.box.Wrap(c)
}

// result is what one run of a tool left behind.
type result struct {
	rest   []byte // standard output that was not a host request
	answer []byte // the line of rest that is the answer, if one is
	stderr []byte // its tail
	state  *os.ProcessState
}

func (res *result) exitText() string {
	if res.state == nil {
		return "it did not start"
	}
	return res.state.String()
}

// run starts the tool with req as the first line of its standard input,
// answers its host requests with a session of h (none when h is nil: each
// request is denied) until it exits, and returns what it wrote. The error
// is a context error when ctx ended first, a [*tool.Error] otherwise.
func (r *Runtime) run(ctx context.Context, def *tool.Definition, req []byte, h *host.Host) (*result, error) {
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
		return nil, fail(def, "start", "cannot start the tool", r.pathErr)
	}

	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(r.closing, cancel)
	defer stop()

	var sess *host.Session
	if h != nil {
		sess = h.Begin(callCtx)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		if sess != nil {
			sess.End()
		}
		return nil, fail(def, "start", "cannot start the tool", err)
	}
	c := newConn(callCtx, sess, inW, r.opts)
	errTail := &tail.Buffer{Max: tail.Kept}
	cmd := &exec.Cmd{Path: r.path, Args: r.argv, Stdin: inR, Stdout: c, Stderr: errTail}
	p, err := process.Start(callCtx, cmd, process.StartOptions{GracePeriod: r.opts.GracePeriod, Sandbox: r.sandbox})
	inR.Close()
	if err != nil {
		c.end()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fail(def, "start", "cannot start the tool", err)
	}
	c.started(p)
	c.send(append(req, '\n'))
	state, _ := p.Wait()
	c.flush()
	c.end()

	res := &result{rest: c.rest, answer: c.answer, stderr: errTail.Bytes(), state: state}
	if len(res.stderr) > 0 {
		r.log(ctx, def, res)
	}
	switch {
	case c.answer != nil && c.failure == nil:
		// The tool answered: the call is over, whenever the kill that
		// followed reached its process.
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case c.failure != nil:
		return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: RuntimeName, Stage: "execute",
			Message: c.failure.Error() + " and the tool was stopped" + tail.StderrNote(res.stderr), Err: c.failure}
	case callCtx.Err() != nil:
		return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: RuntimeName, Stage: "execute",
			Message: "the runtime was closed while the tool ran"}
	}
	return res, nil
}

func (r *Runtime) log(ctx context.Context, def *tool.Definition, res *result) {
	level := slog.LevelDebug
	if res.state == nil || !res.state.Success() {
		level = slog.LevelWarn
	}
	if !r.opts.Logger.Enabled(ctx, level) {
		return
	}
	r.opts.Logger.LogAttrs(ctx, level, "tool stderr", slog.String("tool", def.Name),
		slog.String("exit", res.exitText()), slog.String("stderr", string(res.stderr)))
}

// outcome reads the tool's answer: the line of its output that was a
// protocol answer, else the whole of its output (less its host requests)
// as a process tool's is read: an answer over several lines, or plain text
// from a tool that exited with status 0.
func (res *result) outcome(def *tool.Definition) (*tool.Outcome, error) {
	out := bytes.TrimRight(res.rest, " \t\r\n")
	if res.answer != nil {
		out = res.answer
	}
	return protocol.Output{Stdout: out, OK: res.state != nil && res.state.Success(), Exit: res.exitText(),
		Stderr: res.stderr, Tool: def.Name, Runtime: RuntimeName}.Outcome()
}

// marshal encodes v for the wire, without escaping HTML.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return b.Bytes()
}

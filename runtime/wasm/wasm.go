// Package wasm runs tools that are WebAssembly modules, with wazero.
//
// A tool is a WASI preview 1 command module that speaks lathe's process
// protocol (the project's docs/protocol.md): it reads one JSON request on
// standard input and writes one JSON answer on standard output, so one
// source, a Go program using package sdk say, builds as a native tool
// (GOOS=linux) or as a WASM one (GOOS=wasip1 GOARCH=wasm) unchanged.
//
//	rt, err := wasm.NewRuntime(wasm.Config{CacheDir: wasm.DefaultCacheDir()})
//	defer rt.Close()
//	tools, err := rt.Tools(ctx, "tools/weather.wasm", wasm.Options{Host: h, Workspace: root})
//
// A [Runtime] compiles each module file once (by its content) and keeps
// wazero's compilation cache on disk, outside the workspace; every call
// gets an instance of its own, discarded when the call ends. A module
// reaches nothing of the host but what it is given:
//
//   - files through WASI preopens: the workspace, and the directories its
//     permissions name outside it, each opened through an [os.Root] so
//     that no "..", absolute path or symbolic link leads out, and each
//     operation checked against the tool's permissions and the policy
//     (and recorded) by its call's host session;
//   - no network at all (WASI preview 1 has sockets only when the host
//     hands them over, and lathe hands over none); it fetches through the
//     host API;
//   - the host API (package host), as JSON-RPC lines over its standard
//     input and output after the request, exactly as a VFS tool speaks it,
//     or through the host function lathe.host_call (docs/host.md).
//
// A call's memory is limited ([Options].MemoryLimit), its deadline and
// cancellation stop it wherever it is, its standard output is capped, and
// the tail of its standard error goes into failures. The real clocks and
// a cryptographic random source are given, as a native tool has them.
package wasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"github.com/lathe-tools/lathe/internal/tail"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/host/scope"
	"github.com/lathe-tools/lathe/internal/statedir"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/tool"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// RuntimeName is the name of this runtime in definitions and errors.
const RuntimeName = "wasm"

// Defaults for the zero fields of [Options].
const (
	DefaultMemoryLimit    = 256 << 20
	DefaultMaxOutputBytes = process.DefaultMaxOutputBytes
)

// maxModuleBytes bounds a module file read: lathe does not compile a
// larger one.
const maxModuleBytes = 512 << 20

// ErrOutputLimit is wrapped by the error of a call whose module wrote more
// than [Options].MaxOutputBytes to standard output and was stopped.
var ErrOutputLimit = process.ErrOutputLimit

// ErrNotWASI is wrapped by the error of a file that is not a WASI preview 1
// command module.
var ErrNotWASI = errors.New("not a WASI command module")

// DefaultCacheDir returns where compiled modules are cached:
// $LATHE_CACHE_DIR/wasm when the variable is set, otherwise lathe/wasm in
// the user's cache directory. It returns "" when there is no such place.
func DefaultCacheDir() string {
	if dir := os.Getenv(process.CacheDirEnv); dir != "" {
		return filepath.Join(dir, "wasm")
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "lathe", "wasm")
}

// Config configures a [Runtime].
type Config struct {
	// CacheDir keeps wazero's compiled code on disk, keyed by the module's
	// content; "" keeps nothing on disk. The code in it runs as lathe, so
	// the directory must belong to this user and be writable by no one
	// else, and must not lie in Workspace, where a tool could write it.
	CacheDir string
	// Workspace, when set, is a directory CacheDir must not lie in.
	Workspace string
}

// Runtime compiles and runs WASM modules. One serves all the WASM tools of
// an engine: the engine owns it (Engine.Own) and closes it last.
type Runtime struct {
	rt    wazero.Runtime
	cache wazero.CompilationCache

	mu     sync.Mutex
	mods   map[[32]byte]*compiled
	closed bool
	// mems holds the linear memories of finished calls, zeroed, for the
	// next calls to take instead of allocating their own (see memory).
	mems sync.Pool
	wg   sync.WaitGroup

	closing context.Context // done once Close is called
	close   context.CancelFunc
}

// compiled is one module, compiled once however many tools use it.
type compiled struct {
	once sync.Once
	mod  wazero.CompiledModule
	err  error
}

// NewRuntime returns a runtime. An unsafe cache directory is an error that
// says why; the caller may go on without one (Config{}).
func NewRuntime(cfg Config) (*Runtime, error) {
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(true)
	r := &Runtime{mods: map[[32]byte]*compiled{}}
	if cfg.CacheDir != "" {
		if err := checkCacheDir(cfg.CacheDir, cfg.Workspace); err != nil {
			return nil, err
		}
		cache, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm: the compilation cache %s: %w", cfg.CacheDir, err)
		}
		r.cache = cache
		rc = rc.WithCompilationCache(cache)
	}
	ctx := context.Background()
	r.rt = wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r.rt); err != nil {
		r.rt.Close(ctx)
		return nil, fmt.Errorf("wasm: %w", err)
	}
	if err := instantiateHostModule(ctx, r.rt); err != nil {
		r.rt.Close(ctx)
		return nil, fmt.Errorf("wasm: %w", err)
	}
	r.closing, r.close = context.WithCancel(context.Background())
	return r, nil
}

// checkCacheDir refuses a cache directory that another user, or a tool
// through the workspace, could write: what is in it runs as lathe.
func checkCacheDir(dir, workspace string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("wasm: the compilation cache %s is not an absolute path", dir)
	}
	if workspace != "" {
		if in, err := statedir.Inside(dir, workspace); err != nil || in {
			return fmt.Errorf("wasm: the compilation cache %s lies in the workspace, where a tool could write code that lathe would run", dir)
		}
	}
	if err := statedir.MkdirAll(dir, "wasm compilation cache"); err != nil {
		return fmt.Errorf("wasm: %w", err)
	}
	if err := statedir.CheckDir(dir, "wasm compilation cache"); err != nil {
		return fmt.Errorf("wasm: %w", err)
	}
	// wazero keeps its files in a subdirectory per version; one made by
	// someone else before lathe made the parent is refused too.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "wazero-") {
			if err := statedir.CheckDir(filepath.Join(dir, e.Name()), "wasm compilation cache"); err != nil {
				return fmt.Errorf("wasm: %w", err)
			}
		}
	}
	return nil
}

// Close stops the calls in flight and frees every compiled module. Later
// calls fail.
func (r *Runtime) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.close()
	r.wg.Wait()
	ctx := context.Background()
	err := r.rt.Close(ctx)
	if r.cache != nil {
		r.cache.Close(ctx)
	}
	return err
}

// compile returns the compiled module of the bytes b, compiling it the
// first time.
func (r *Runtime) compile(ctx context.Context, b []byte) (wazero.CompiledModule, error) {
	sum := sha256.Sum256(b)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, errors.New("the wasm runtime is closed")
	}
	c := r.mods[sum]
	if c == nil {
		c = &compiled{}
		r.mods[sum] = c
	}
	r.mu.Unlock()
	c.once.Do(func() {
		c.mod, c.err = r.rt.CompileModule(ctx, b)
		if c.err == nil {
			c.err = checkCommand(c.mod)
		}
	})
	if c.err != nil && ctx.Err() != nil {
		// A compilation cut short says nothing of the module: the next
		// load compiles it again.
		r.mu.Lock()
		if r.mods[sum] == c {
			delete(r.mods, sum)
		}
		r.mu.Unlock()
	}
	return c.mod, c.err
}

// checkCommand refuses a module that is not a WASI preview 1 command, or
// that needs what lathe does not provide, before anything runs.
func checkCommand(m wazero.CompiledModule) error {
	if _, ok := m.ExportedFunctions()["_start"]; !ok {
		return fmt.Errorf("%w: it exports no _start function (a library or reactor module is not a tool)", ErrNotWASI)
	}
	wasi := false
	for _, f := range m.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch {
		case mod == wasi_snapshot_preview1.ModuleName:
			wasi = true
		case mod == hostModule && hostFunctions[name]:
		case mod == "gojs":
			return fmt.Errorf("%w: it imports gojs.%s, so it was built for GOOS=js; build it with GOOS=wasip1 GOARCH=wasm", ErrNotWASI, name)
		default:
			return fmt.Errorf("%w: it imports %s.%s, which lathe does not provide (lathe gives %s and %s)",
				ErrNotWASI, mod, name, wasi_snapshot_preview1.ModuleName, hostModule)
		}
	}
	if !wasi {
		return fmt.Errorf("%w: it imports nothing from %s, so it cannot read its request", ErrNotWASI, wasi_snapshot_preview1.ModuleName)
	}
	return nil
}

// Options configure the tools of one module.
type Options struct {
	// Tool is the name the module knows the tool by, sent in each request.
	// Empty means the name of the definition being executed.
	Tool string
	// Options are passed to the tool in each request's context.
	Options map[string]any
	// Host answers the module's host requests and checks its file
	// operations. Nil gives the module no files and no host API.
	Host *host.Host
	// Workspace is the workspace root, an absolute directory: the request's
	// root, the module's working directory, and a preopen.
	Workspace string
	// Perms are the tool's permissions (Host's): directories outside the
	// workspace that they name become preopens too.
	Perms host.Permissions
	// MemoryLimit bounds the module's linear memory, in bytes. Zero means
	// [DefaultMemoryLimit].
	MemoryLimit int64
	// MaxOutputBytes caps what the module may write to standard output;
	// past it the call is stopped and fails. Zero means
	// [DefaultMaxOutputBytes].
	MaxOutputBytes int
	// Logger receives the tail of each call's standard error, at debug
	// level (warn when the call failed). Nil discards it.
	Logger *slog.Logger
}

// Module runs the tools of one module file, an instance per call. It is a
// [tool.Runtime]; its methods are safe for concurrent use.
type Module struct {
	r      *Runtime
	path   string
	mod    wazero.CompiledModule
	opts   Options
	mounts []mount
	// check, when set, replaces the session's file check (for tests of
	// the preopens' own confinement).
	check checker
}

var (
	_ tool.Runtime           = (*Module)(nil)
	_ tool.Closer            = (*Module)(nil)
	_ tool.Cooperative       = (*Module)(nil)
	_ tool.ArgumentFormatter = (*Module)(nil)
)

// Load reads and compiles the module at path (once per content for the
// runtime's life) and returns the runtime of its tools. A file that is not
// WASM, or not a WASI command module, is an error saying so.
func (r *Runtime) Load(ctx context.Context, path string, opts Options) (*Module, error) {
	b, err := readModule(path)
	if err != nil {
		return nil, err
	}
	mod, err := r.compile(ctx, b)
	if err != nil {
		if errors.Is(err, ErrNotWASI) {
			return nil, fmt.Errorf("%s is %w", path, err)
		}
		return nil, fmt.Errorf("%s does not compile: %w", path, err)
	}
	if opts.MemoryLimit <= 0 {
		opts.MemoryLimit = DefaultMemoryLimit
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	for _, m := range mod.ExportedMemories() {
		if min := uint64(m.Min()) << 16; min > uint64(opts.MemoryLimit) {
			return nil, fmt.Errorf("%s needs %d MiB of memory to start, over its limit of %d MiB",
				path, min>>20, opts.MemoryLimit>>20)
		}
	}
	if len(mod.ImportedMemories()) > 0 {
		return nil, fmt.Errorf("%s is %w: it imports its memory", path, ErrNotWASI)
	}
	if opts.Host != nil {
		if err := selfWritable(path, opts.Host); err != nil {
			return nil, err
		}
	}
	m := &Module{r: r, path: path, mod: mod, opts: opts}
	if opts.Host != nil {
		m.mounts = mounts(opts.Workspace, opts.Perms)
	}
	return m, nil
}

// selfWritable refuses a module that lies in its own write scope: through
// WASI or the host API it could rewrite itself, and the next lathe would
// run (and believe the self-description of) what it wrote.
func selfWritable(path string, h *host.Host) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil // readModule has read it; a link gone since is no write scope
	}
	ws := h.Workspace()
	rel, ok := strings.CutPrefix(real, ws+string(filepath.Separator))
	if !ok {
		return nil
	}
	rel = filepath.ToSlash(rel)
	for _, w := range h.Permissions().Write {
		if w == ws {
			w = "."
		} else if r, ok := strings.CutPrefix(w, ws+"/"); ok {
			w = r
		}
		if pat, err := scope.CompilePath(w); err == nil && pat.Match(rel) {
			return fmt.Errorf("the module %s lies in its own write scope (write = %q), so it could rewrite itself; keep it out of write", rel, w)
		}
	}
	return nil
}

// readModule reads a module file, refusing what is not WASM at all with a
// message that says what it is instead.
func readModule(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the module %s cannot be read: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, fmt.Errorf("the module %s cannot be read: %w", path, err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("the module %s is not a regular file", path)
	case fi.Size() > maxModuleBytes:
		return nil, fmt.Errorf("the module %s is %d MiB, over lathe's limit of %d MiB", path, fi.Size()>>20, maxModuleBytes>>20)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && fi.Size() > 0 {
		return nil, fmt.Errorf("the module %s cannot be read: %w", path, err)
	}
	if !bytes.HasPrefix(b, []byte("\x00asm")) {
		what := "it does not start with the WASM magic \\0asm"
		switch {
		case bytes.HasPrefix(b, []byte("\x7fELF")):
			what = "it is an ELF executable; run it as a process tool"
		case bytes.HasPrefix(b, []byte("#!")):
			what = "it is a script; run it as a process tool"
		case bytes.HasPrefix(bytes.TrimSpace(b), []byte("(module")):
			what = "it is WebAssembly text; compile it to a binary module"
		}
		return nil, fmt.Errorf("%s is not a WASM module: %s", path, what)
	}
	return b, nil
}

// Cooperative reports true: when its context ends, a call's instance is
// closed wherever it is, and Execute returns at once.
func (m *Module) Cooperative() bool { return true }

// Close does nothing: the [Runtime] holds what a module's tools use, and
// its owner closes it.
func (m *Module) Close() error { return nil }

// Execute runs the tool once, in an instance of its own.
func (m *Module) Execute(ctx context.Context, def *tool.Definition, call *tool.Call) (*tool.Outcome, error) {
	res, err := m.run(ctx, def, protocol.ActionRun, call)
	if err != nil {
		return nil, err
	}
	return m.outcome(def, res)
}

// FormatArguments returns what the module answers to the format_arguments
// action, making the runtime a [tool.ArgumentFormatter].
func (m *Module) FormatArguments(ctx context.Context, def *tool.Definition, call *tool.Call) (string, error) {
	res, err := m.run(ctx, def, protocol.ActionFormatArguments, call)
	if err != nil {
		return "", err
	}
	out, err := m.outcome(def, res)
	if err != nil {
		return "", err
	}
	if out.Result == nil || out.Result.IsError {
		return "", fmt.Errorf("%s: format_arguments did not succeed: %v", def.Name, out.Err())
	}
	return out.Result.Text(), nil
}

// Describe runs the module with the schema action and returns the tools it
// holds, as [process.Describe] does for a binary. An answer that is not
// one matches [process.ErrNoSchema].
func (m *Module) Describe(ctx context.Context) ([]protocol.ToolSchema, error) {
	def := &tool.Definition{Name: "schema"}
	res, err := m.run(ctx, def, protocol.ActionSchema, &tool.Call{})
	if err != nil {
		var te *tool.Error
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%s", te.Message)
		}
		return nil, err
	}
	return process.SchemaAnswer(res.stdout, res.exitText(), res.stderr)
}

// Tools loads the module at path, asks it for its tools, and returns one
// tool for each, as [process.Toolset.Tools] does for a binary. ctx bounds
// the description, not the calls.
func (r *Runtime) Tools(ctx context.Context, path string, opts Options) (tools []tool.Tool, leftOut []error, err error) {
	m, err := r.Load(ctx, path, opts)
	if err != nil {
		return nil, nil, err
	}
	schemas, err := m.Describe(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range schemas {
		def, err := Definition(s, s.Name)
		if err != nil {
			leftOut = append(leftOut, &process.LeftOutError{Name: s.Name, Err: err})
			continue
		}
		tools = append(tools, m.Tool(def, s.Name))
	}
	return tools, leftOut, nil
}

// Definition returns the definition of the tool a module described as s,
// named name, checked as [process.Definition] checks a binary's.
func Definition(s protocol.ToolSchema, name string) (tool.Definition, error) {
	def, err := process.Definition(s, name)
	def.Runtime = RuntimeName
	return def, err
}

// Tool returns the tool def of the module, known to the module as name
// (empty: def.Name).
func (m *Module) Tool(def tool.Definition, name string) tool.Tool {
	if def.Runtime == "" || def.Runtime == process.RuntimeName {
		def.Runtime = RuntimeName
	}
	if def.Source == "" {
		def.Source = "local"
	}
	mm := *m
	mm.opts.Tool = name
	return tool.Tool{Definition: def, Runtime: &mm}
}

// WithOptions returns the runtime of the same tool whose requests carry
// options in their context.
func (m *Module) WithOptions(options map[string]any) *Module {
	mm := *m
	mm.opts.Options = options
	return &mm
}

func (m *Module) toolName(def *tool.Definition) string {
	if m.opts.Tool != "" {
		return m.opts.Tool
	}
	return def.Name
}

func (m *Module) fail(def *tool.Definition, stage, msg string, err error) *tool.Error {
	return &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: RuntimeName, Stage: stage, Message: msg, Err: err}
}

// result is what one run of a module left behind.
type result struct {
	stdout []byte
	stderr []byte // the tail
	exit   uint32
	exited bool // it ended by returning from _start or calling proc_exit
}

func (res *result) exitText() string {
	if !res.exited {
		return "it did not finish"
	}
	return fmt.Sprintf("exit code %d", res.exit)
}

// request encodes the protocol request, with context.host set when the
// module has the host API.
func (m *Module) request(def *tool.Definition, action protocol.Action, call *tool.Call) ([]byte, error) {
	r := &protocol.Request{
		Action:    action,
		Arguments: call.Arguments,
		Answers:   call.Answers,
		Context:   protocol.Context{Root: m.opts.Workspace, CallID: call.ID, Options: m.opts.Options},
	}
	if action != protocol.ActionSchema {
		r.Tool = m.toolName(def)
	}
	if m.opts.Host != nil {
		// With the host API, the context says so.
		r.Context.Host = host.Version
	}
	return protocol.NewRequest(r)
}

// run instantiates the module for one request and runs it to its end. The
// error is a context error when ctx ended first, a [*tool.Error] otherwise.
func (m *Module) run(ctx context.Context, def *tool.Definition, action protocol.Action, call *tool.Call) (*result, error) {
	r := m.r
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: RuntimeName, Stage: "execute",
			Message: "the runtime is closed"}
	}
	r.wg.Add(1)
	r.mu.Unlock()
	defer r.wg.Done()

	req, err := m.request(def, action, call)
	if err != nil {
		return nil, m.fail(def, "encode", "cannot encode the request", err)
	}
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(r.closing, cancel)
	defer stop()

	var sess *host.Session
	if m.opts.Host != nil {
		sess = m.opts.Host.Begin(ctx)
		defer sess.End()
	}
	io := newStdio(callCtx, sess, req, m.opts.MaxOutputBytes, cancel)
	errTail := &tail.Buffer{Max: tail.Kept}
	mem := &memory{limit: uint64(m.opts.MemoryLimit), pool: &r.mems}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs(filepath.Base(m.path)).
		WithStdin(io).WithStdout(io).WithStderr(errTail).
		WithSysWalltime().WithSysNanotime().WithSysNanosleep().
		WithRandSource(rand.Reader)
	if m.opts.Workspace != "" {
		cfg = cfg.WithEnv("PWD", m.opts.Workspace)
	}
	var roots []*os.Root
	defer func() {
		for _, rt := range roots {
			rt.Close()
		}
	}()
	if sess != nil && len(m.mounts) > 0 {
		fc := wazero.NewFSConfig()
		check := m.check
		if check == nil {
			check = sessionChecker(sess)
		}
		for _, mt := range m.mounts {
			root, err := os.OpenRoot(mt.dir)
			if err != nil {
				continue // a directory gone since loading has nothing to open
			}
			roots = append(roots, root)
			fc = fc.(sysfs.FSConfig).WithSysFSMount(&confinedFS{ctx: callCtx, root: root, dir: mt.dir, writable: mt.writable, check: check}, mt.dir)
		}
		cfg = cfg.WithFSConfig(fc)
	}
	runCtx := experimental.WithMemoryAllocator(callCtx, mem)
	runCtx = context.WithValue(runCtx, callKey{}, &callState{ctx: callCtx, sess: sess})
	inst, runErr := r.rt.InstantiateModule(runCtx, m.mod, cfg)
	if inst != nil {
		inst.Close(context.Background())
	}
	io.flush()
	res := &result{stdout: io.out, stderr: errTail.Bytes()}
	var exitErr *sys.ExitError
	switch {
	case runErr == nil:
		res.exited = true
	case errors.As(runErr, &exitErr) && exitErr.ExitCode() < sys.ExitCodeContextCanceled:
		res.exited, res.exit = true, exitErr.ExitCode()
	}
	if len(res.stderr) > 0 {
		m.log(ctx, def, res, runErr)
	}
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case io.flooded:
		return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: RuntimeName, Stage: "execute",
			Message: fmt.Sprintf("the tool sent host requests without reading their answers (over %d MiB of them) and was stopped", maxPendingInput>>20)}
	case io.overflow:
		return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: RuntimeName, Stage: "execute",
			Message: fmt.Sprintf("the tool wrote more than %d bytes to standard output and was stopped", m.opts.MaxOutputBytes),
			Err:     ErrOutputLimit}
	case callCtx.Err() != nil:
		return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: RuntimeName, Stage: "execute",
			Message: "the runtime was closed while the tool ran"}
	case !res.exited:
		return nil, m.fail(def, "execute", m.trapText(runErr, mem)+tail.StderrNote(res.stderr), runErr)
	}
	if mem.refused > 0 && res.exit != 0 {
		// The guest's own runtime turned a failed memory.grow into an
		// exit (Go's "out of memory" is exit code 2): say what happened.
		return nil, m.fail(def, "execute", fmt.Sprintf("the tool ran out of memory (it asked for %d MiB, over its limit of %d MiB) and ended (%s) without an answer",
			mem.refused>>20, mem.limit>>20, res.exitText())+tail.StderrNote(res.stderr), nil)
	}
	return res, nil
}

// trapText says why a module stopped without exiting: a trap, named with
// the function wazero found it in, or memory it could not get.
func (m *Module) trapText(err error, mem *memory) string {
	msg := "the tool stopped"
	if err != nil {
		msg = err.Error()
	}
	var b strings.Builder
	first, rest, _ := strings.Cut(msg, "\n")
	first = strings.TrimPrefix(first, "module[] function[_start] failed: ")
	fmt.Fprintf(&b, "the tool trapped: %s", first)
	if mem.refused > 0 {
		fmt.Fprintf(&b, " (it ran out of memory: it asked for %d MiB, over its limit of %d MiB)", mem.refused>>20, mem.limit>>20)
	}
	if rest != "" {
		b.WriteString("\n")
		b.WriteString(tail.Last(rest, tail.Shown))
	}
	return b.String()
}

func (m *Module) log(ctx context.Context, def *tool.Definition, res *result, err error) {
	level := slog.LevelDebug
	if !res.exited || res.exit != 0 {
		level = slog.LevelWarn
	}
	if !m.opts.Logger.Enabled(ctx, level) {
		return
	}
	m.opts.Logger.LogAttrs(ctx, level, "tool stderr", slog.String("tool", def.Name),
		slog.String("exit", res.exitText()), slog.String("stderr", string(res.stderr)))
}

// outcome reads a module's answer as the process runtime reads a
// process's: a protocol answer counts whatever the exit code; without
// one, plain output with exit code 0 is a text result and anything else a
// runtime failure.
func (m *Module) outcome(def *tool.Definition, res *result) (*tool.Outcome, error) {
	return protocol.Output{Stdout: res.stdout, OK: res.exit == 0, Exit: res.exitText(), Stderr: res.stderr,
		Tool: def.Name, Runtime: RuntimeName}.Outcome()
}

// sessionChecker returns the file check of a session (its Check method).
// A host without one cannot vouch for any file, so every file operation is
// then refused rather than let through unchecked.
func sessionChecker(s *host.Session) checker {
	if c, ok := any(s).(interface {
		Check(ctx context.Context, kind, path string) error
	}); ok {
		return c.Check
	}
	return func(context.Context, string, string) error {
		return &host.Error{Code: host.CodeDenied, Message: "this lathe's host cannot check file operations"}
	}
}

// memory is the linear memory of one instance, grown up to limit. A grow
// past it fails as memory.grow fails, and is remembered so that the
// failure can say why.
//
// A call's memory comes from pool when a finished call left one there,
// and goes back to it when the instance is freed: a memory of a few
// hundred KiB per call is otherwise most of what a call allocates, and
// the garbage collector's work for it a large share of a small tool's
// cost. Every byte a call could have written is zeroed before the memory
// goes back (Free), and the capacity past its length never held anything,
// so a call sees only zeros, as WebAssembly requires, and never a byte of
// an earlier call's, which may have been another tool's.
type memory struct {
	limit   uint64
	refused uint64 // the largest size asked for past limit
	buf     []byte
	pool    *sync.Pool // of *[]byte, all zero up to their capacity
}

// maxPooled bounds the capacity of a memory kept for later calls, so that
// one large call does not pin its memory for the runtime's life.
const maxPooled = 16 << 20

func (m *memory) Allocate(_, _ uint64) experimental.LinearMemory { return m }

func (m *memory) Reallocate(size uint64) []byte {
	if size > m.limit {
		m.refused = max(m.refused, size)
		return nil
	}
	if uint64(cap(m.buf)) >= size {
		m.buf = m.buf[:size]
		return m.buf
	}
	if m.buf == nil && m.pool != nil {
		if p, _ := m.pool.Get().(*[]byte); p != nil {
			if uint64(cap(*p)) >= size {
				m.buf = (*p)[:size]
				return m.buf
			}
			m.pool.Put(p)
		}
	}
	nb := make([]byte, size, min(max(size, uint64(cap(m.buf))*2), m.limit))
	copy(nb, m.buf)
	m.buf = nb
	return m.buf
}

func (m *memory) Free() {
	if m.pool != nil && m.buf != nil && cap(m.buf) <= maxPooled {
		// The length only grows, and what lies past it was zero when the
		// memory was made or taken: clearing up to it clears everything.
		clear(m.buf)
		b := m.buf[:0]
		m.pool.Put(&b)
	}
	m.buf = nil
}

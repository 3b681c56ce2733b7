// Package host is what a confined tool may ask lathe to do for it: read,
// write, list, stat and remove files; fetch a URL; run a command under a
// sandbox profile; read an environment variable; log; report progress;
// ask the person a question. The runtimes "vfs" and "wasm" carry a tool's
// requests ([Request], JSON-RPC 2.0) to a [Session] and its answers back.
//
// A [Host] serves one tool; [Host.Begin] starts the [Session] of one call:
//
//	h, err := host.New(host.Config{Tool: "fmt", Workspace: root,
//		Perms: host.Permissions{Read: []string{"src/**"}, Write: []string{"out/"}}})
//	s := h.Begin(ctx) // ctx is the call's: its deadline, hooks, policy, audit
//	defer s.End()
//	res, err := s.Do(ctx, host.MethodRead, json.RawMessage(`{"path":"src/main.go"}`))
//
// Every operation is decided in one order: the tool's permissions
// ([Permissions], from its [tools.NAME] table; outside them the request is
// denied with [CodeDenied] and a message naming the key that would allow
// it), then the policy's rules that name an operation
// (policy.CheckOperation), then it is done; allowed or denied, it is
// recorded with its call (lathe.RecordOperation). After [Session.End]
// every request fails with [CodeEnded] and runs nothing.
//
// Paths are resolved, symbolic links included, before they are checked,
// and then reached from a descriptor of the workspace following no link,
// so that a link swapped in between fails the request instead of
// redirecting it. lathe's state directory is never reachable and its
// configuration never writable (package protect). The project's
// docs/host.md specifies the API; docs/security.md says what it defends
// against.
package host

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/protect"
	"github.com/lathe-tools/lathe/sandbox"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

// Permissions are what a tool may reach through the host, scoped as
// Deno's are. Paths are relative to the workspace (or absolute, inside
// it); a pattern may end in "/" or "/**" for everything below a directory,
// and may hold * and ? within one element. Package scope documents the
// syntax of each key; [Permissions.Validate] checks it.
type Permissions struct {
	Read  []string `json:"read,omitempty"`  // paths it may read, list and stat
	Write []string `json:"write,omitempty"` // paths it may also write and remove
	Net   []string `json:"net,omitempty"`   // "host:port" or "host" (any port), * within a label
	Env   []string `json:"env,omitempty"`   // variable names
	Run   []string `json:"run,omitempty"`   // programs, by name or path
}

// Limits bound what one request may move. A zero field means the default
// of [DefaultLimits].
type Limits struct {
	// Read is the most bytes one fs/read returns.
	Read int64
	// Write is the most bytes one fs/write may carry.
	Write int64
	// Fetch is the most bytes of a response body net/fetch returns; the
	// rest is cut (FetchResult.Truncated).
	Fetch int64
	// Output is the most bytes of each of a program's standard output and
	// error that proc/run returns; the rest is cut.
	Output int64
	// List is the most entries one fs/list returns.
	List int
	// Message is the most bytes of a log line or a question.
	Message int
}

// DefaultLimits returns the limits of a zero [Limits].
func DefaultLimits() Limits {
	return Limits{Read: 16 << 20, Write: 16 << 20, Fetch: 16 << 20, Output: 1 << 20, List: 10000, Message: 64 << 10}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.Read <= 0 {
		l.Read = d.Read
	}
	if l.Write <= 0 {
		l.Write = d.Write
	}
	if l.Fetch <= 0 {
		l.Fetch = d.Fetch
	}
	if l.Output <= 0 {
		l.Output = d.Output
	}
	if l.List <= 0 {
		l.List = d.List
	}
	if l.Message <= 0 {
		l.Message = d.Message
	}
	return l
}

// Config is a host for one tool.
type Config struct {
	// Tool is the tool's name, for messages and the policy.
	Tool string
	// Workspace is the workspace root, an absolute directory.
	Workspace string
	// Perms are what the configuration grants.
	Perms Permissions
	// Table names the configuration table a denial tells the person to
	// change, as in "tools.fmt" or "toolsets.text"; empty means
	// "tools.<Tool>".
	Table string
	// Origin is where that table is, as in "lathe.toml:12"; it is added to
	// denials when set.
	Origin string
	// Sandbox is the sandbox of the programs proc/run starts: its profile,
	// limits and the [sandbox.permissions] of the configuration. Nil means
	// the standard profile with the default limits. Its Workspace is set
	// to the host's.
	Sandbox *sandbox.Config
	// Limits bound each request.
	Limits Limits
}

// Host answers the host requests of one tool's calls. It is safe for
// concurrent use; each call has its own [Session].
type Host struct {
	cfg     Config
	ws      *tools.Workspace
	root    fsRoot
	perms   compiled
	private []string // lathe's per-user directories inside the workspace, relative
	sandbox sandbox.Config
	net     *netClient
}

// New returns a host for cfg. It fails when the workspace is not a
// directory or a permission is malformed ([Permissions.Validate]), or an
// absolute path lies outside the workspace.
func New(cfg Config) (*Host, error) {
	if cfg.Workspace == "" {
		// Never the current directory by default: the host's reach is
		// decided by the configuration, not by where lathe runs.
		return nil, fmt.Errorf("host of %s: the workspace is not set", cfg.Tool)
	}
	if cfg.Table == "" {
		cfg.Table = "tools." + cmp.Or(cfg.Tool, "NAME")
	}
	if cfg.Tool == "" {
		cfg.Tool = "the tool"
	}
	cfg.Limits = cfg.Limits.withDefaults()
	ws, err := tools.NewWorkspace(cfg.Workspace)
	if err != nil {
		return nil, fmt.Errorf("host of %s: %w", cfg.Tool, err)
	}
	h := &Host{cfg: cfg, ws: ws}
	h.cfg.Workspace = ws.Dir()
	if h.perms, err = compile(cfg.Perms, []string{cfg.Workspace, ws.Dir()}, ws.Dir()); err != nil {
		ws.Close()
		return nil, fmt.Errorf("host of %s: [%s] %w", cfg.Tool, cfg.Table, err)
	}
	if h.root, err = openRoot(ws.Dir()); err != nil {
		ws.Close()
		return nil, fmt.Errorf("host of %s: workspace: %w", cfg.Tool, err)
	}
	for _, d := range protect.UserDirs() {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			d = real
		}
		if rel, err := filepath.Rel(ws.Dir(), d); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			h.private = append(h.private, filepath.ToSlash(rel))
		}
	}
	if cfg.Sandbox != nil {
		h.sandbox = *cfg.Sandbox
	}
	h.sandbox.Workspace = ws.Dir()
	// lathe's own state is out of a program's reach, as it is out of the
	// file requests'.
	h.sandbox.Hide = append(slices.Clone(h.sandbox.Hide), protect.StateDir)
	if _, err := sandbox.ParseProfile(string(h.sandbox.Profile)); err != nil {
		h.Close()
		return nil, fmt.Errorf("host of %s: %w", cfg.Tool, err)
	}
	h.net = newNetClient(h)
	return h, nil
}

// Workspace returns the workspace root: absolute, with its symbolic links
// resolved.
func (h *Host) Workspace() string { return h.cfg.Workspace }

// Permissions returns a copy of the permissions the host grants.
func (h *Host) Permissions() Permissions {
	p := h.cfg.Perms
	return Permissions{Read: slices.Clone(p.Read), Write: slices.Clone(p.Write),
		Net: slices.Clone(p.Net), Env: slices.Clone(p.Env), Run: slices.Clone(p.Run)}
}

// Close releases the descriptors the host holds. Sessions begun after it
// fail their file requests.
func (h *Host) Close() error {
	h.net.close()
	return errors.Join(h.root.close(), h.ws.Close())
}

// Session is the host of one call: it answers requests until End, and
// refuses every request after it with [CodeEnded]. Its methods are safe
// for concurrent use.
type Session struct {
	h      *Host
	ctx    context.Context // the call's, cancelled by End
	cancel context.CancelFunc

	mu       sync.Mutex
	ended    bool
	inflight sync.WaitGroup
}

// Begin starts the session of the call running in ctx: its deadline bounds
// every operation, its hooks (tool.HooksFrom) carry log, progress and ask,
// and its policy and audit record decide and keep the operations.
func (h *Host) Begin(ctx context.Context) *Session {
	c, cancel := context.WithCancel(ctx)
	return &Session{h: h, ctx: c, cancel: cancel}
}

// End ends the session: requests in flight are cancelled, and End returns
// once they have returned; every later request fails with [CodeEnded].
func (s *Session) End() {
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
	s.cancel()
	s.inflight.Wait()
}

// enter admits one request, unless the session has ended; leave must
// follow.
func (s *Session) enter() *Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.ctx.Err() != nil {
		return &Error{Code: CodeEnded, Message: "the call this request belongs to has ended; nothing was done"}
	}
	s.inflight.Add(1)
	return nil
}

// opContext is the context of one request: the call's (values, deadline,
// End), also ended when ctx, the request's own, is.
func (s *Session) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(s.ctx)
	if ctx == nil || ctx == s.ctx {
		return c, cancel
	}
	stop := context.AfterFunc(ctx, cancel)
	return c, func() { stop(); cancel() }
}

// JSON-RPC's own codes that the host answers with.
const (
	codeInvalidParams  = -32602
	codeMethodNotFound = -32601
)

// Do runs one request. A returned error is a *[Error]; the result is the
// JSON of the method's result type.
func (s *Session) Do(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if e := s.enter(); e != nil {
		return nil, e
	}
	defer s.inflight.Done()
	c, cancel := s.opContext(ctx)
	defer cancel()
	res, e := s.do(c, method, params)
	if e != nil {
		if c.Err() != nil && s.isEnded() && e.Code != CodeDenied {
			e = &Error{Code: CodeEnded, Message: "the call this request belongs to ended while it ran: " + e.Message}
		}
		return nil, e
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, &Error{Code: CodeFailed, Message: "host: the result does not encode: " + err.Error()}
	}
	return b, nil
}

func (s *Session) isEnded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended || s.ctx.Err() != nil
}

func (s *Session) do(ctx context.Context, method string, params json.RawMessage) (any, *Error) {
	switch method {
	case MethodRead:
		var p ReadParams
		if e := decode(params, &p); e != nil {
			return nil, e
		}
		return s.read(ctx, p)
	case MethodWrite:
		var p WriteParams
		if e := decode(params, &p); e != nil {
			return nil, e
		}
		return s.write(ctx, p)
	case MethodList:
		var p PathParams
		if e := decode(params, &p); e != nil {
			return nil, e
		}
		return s.list(ctx, p)
	case MethodStat:
		var p PathParams
		if e := decode(params, &p); e != nil {
			return nil, e
		}
		return s.stat(ctx, p)
	case MethodRemove:
		var p RemoveParams
		if e := decode(params, &p); e != nil {
			return nil, e
		}
		return s.remove(ctx, p)
	case MethodFetch:
		var p FetchParams
		if e := decode(params, &p); e != nil {
			return nil, e
		}
		return s.fetch(ctx, p)
	case MethodRun:
		var p RunParams
		if e := decode(params, &p); e != nil {
			return nil, e
		}
		return s.run(ctx, p)
	case MethodEnv:
		var p EnvParams
		if e := decode(params, &p); e != nil {
			return nil, e
		}
		return s.env(ctx, p)
	case MethodLog:
		var p LogParams
		if e := decode(params, &p); e != nil {
			return nil, e
		}
		return s.log(ctx, p)
	case MethodProgress:
		var p ProgressParams
		if e := decode(params, &p); e != nil {
			return nil, e
		}
		return s.progress(ctx, p)
	case MethodAsk:
		var p AskParams
		if e := decode(params, &p); e != nil {
			return nil, e
		}
		return s.ask(ctx, p)
	}
	return nil, &Error{Code: codeMethodNotFound, Message: fmt.Sprintf("host API: no method %q", method)}
}

func decode(params json.RawMessage, v any) *Error {
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(params, v); err != nil {
		return &Error{Code: codeInvalidParams, Message: "params do not decode: " + err.Error()}
	}
	return nil
}

// op is one operation on its way: what is recorded of it.
type op struct {
	kind, subject string
	started       time.Time
	approval      string
	by, reason    string
	bytes         int64
}

func (s *Session) begin(kind, subject string) *op {
	return &op{kind: kind, subject: subject, started: time.Now()}
}

// deny ends o as denied by what decided (by), records it and returns the
// error the tool gets.
func (s *Session) deny(ctx context.Context, o *op, by, msg string) *Error {
	o.approval, o.by, o.reason = string(policy.Deny), by, msg
	s.record(ctx, o, "")
	return &Error{Code: CodeDenied, Message: msg}
}

// decide puts o to the policy, once the permissions allowed it. A nil
// result lets it go ahead.
func (s *Session) decide(ctx context.Context, o *op) *Error {
	d, err := policy.CheckOperation(ctx, policy.OperationRequest{Kind: o.kind, Subject: o.subject})
	o.by, o.reason = d.By, d.Reason
	if err != nil {
		by := d.By
		if by == "" {
			by = "policy"
		}
		return s.deny(ctx, o, by, err.Error())
	}
	o.approval = string(d.Approval)
	if o.approval == "" {
		o.approval = string(policy.Allow)
	}
	return nil
}

// finish records o, done, with the error it ended in (nil: it
// succeeded), and returns that error.
func (s *Session) finish(ctx context.Context, o *op, e *Error) *Error {
	msg := ""
	if e != nil {
		msg = e.Message
	}
	s.record(ctx, o, msg)
	return e
}

func (s *Session) record(ctx context.Context, o *op, errMsg string) {
	lathe.RecordOperation(ctx, lathe.Operation{
		Kind: o.kind, Subject: o.subject, Approval: o.approval, By: o.by, Reason: o.reason,
		Error: errMsg, Bytes: o.bytes, Started: o.started, Duration: time.Since(o.started),
	})
}

// outside is the message of a request outside the tool's permissions: it
// names the entry to add, the key and the table.
func (h *Host) outside(what, entry, key string) string {
	where := ""
	if h.cfg.Origin != "" {
		where = " (" + h.cfg.Origin + ")"
	}
	return fmt.Sprintf("%s is outside the permissions of %s: to allow it, a person adds %q to %s in [%s]%s",
		what, h.cfg.Tool, entry, key, h.cfg.Table, where)
}

// failed is the error of an allowed operation that failed.
func failed(format string, args ...any) *Error {
	return &Error{Code: CodeFailed, Message: fmt.Sprintf(format, args...)}
}

func tooLarge(format string, args ...any) *Error {
	return &Error{Code: CodeTooLarge, Message: fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) *Error {
	return &Error{Code: codeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// fromTool turns an error of the workspace's resolver into a host error:
// a denial stays one.
func fromTool(err error) *Error {
	var te *tool.Error
	if errors.As(err, &te) && te.Kind == tool.KindDenied {
		return &Error{Code: CodeDenied, Message: te.Message}
	}
	return &Error{Code: CodeFailed, Message: err.Error()}
}

package sdk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"

	"github.com/lathe-tools/lathe/host/wire"
)

// The host API's messages (the project's docs/host.md) come from package
// host/wire, which imports only the standard library, so that a tool
// binary, native or WASM, carries nothing of lathe's own side.

// Host API error codes, as [HostError].Code.
const (
	// CodeDenied: the tool's permissions or the policy refused the operation.
	CodeDenied = wire.CodeDenied
	// CodeFailed: the operation was allowed and failed (no such file).
	CodeFailed = wire.CodeFailed
	// CodeEnded: the call the request belonged to has ended.
	CodeEnded = wire.CodeEnded
	// CodeTooLarge: the request or its answer is over a limit.
	CodeTooLarge = wire.CodeTooLarge
)

// HostError is an error the host answered with. Denied, for one, says the
// operation was refused by the tool's permissions or the policy.
type HostError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *HostError) Error() string { return fmt.Sprintf("host: %s (code %d)", e.Message, e.Code) }

// Denied reports whether the host refused the operation.
func (e *HostError) Denied() bool { return e.Code == CodeDenied }

// ErrNoHost is returned by a [HostClient] whose connection to lathe is gone.
var ErrNoHost = errors.New("host: the connection to lathe is closed")

// FileInfo describes one file. Type is "file", "dir", "symlink" or "other".
type FileInfo = wire.FileInfo

// FetchRequest is an HTTP request for [HostClient.Fetch]. Method defaults
// to GET.
type FetchRequest = wire.FetchParams

// FetchResponse is the response, its body cut at the host's limit
// (Truncated then says so).
type FetchResponse = wire.FetchResult

// RunRequest runs a program through the host, never through a shell:
// Argv[0] is looked up in PATH; Dir is relative to the workspace.
type RunRequest = wire.RunParams

// RunResult is how the program ended and what it wrote.
type RunResult = wire.RunResult

// AskResult is the person's answer to [HostClient.Ask]: Action "accept"
// (Content holds the answer), "decline" or "cancel".
type AskResult = wire.AskResult

type hostKey struct{}

// Host returns the client of the host API of the call ctx belongs to, and
// false when lathe offers none (a plain process tool). A confined tool
// reaches files, URLs, programs and variables only through it:
//
//	h, ok := sdk.Host(ctx)
//	if !ok {
//		return "", errors.New("run me with runtime = \"vfs\" or \"wasm\"")
//	}
//	src, err := h.ReadFile(ctx, "src/main.go")
//
// Every operation is checked against the tool's permissions and the
// policy; a refusal is a [*HostError] whose Denied reports true. The client
// is safe for concurrent use: requests in flight are told apart by id.
func Host(ctx context.Context) (*HostClient, bool) {
	h, ok := ctx.Value(hostKey{}).(*HostClient)
	return h, ok
}

// HostClient speaks the host API over the tool's standard input and
// output, which it shares with the protocol: requests go out as lines
// between nothing else, responses come in on what follows the request.
type HostClient struct {
	w *lineWriter
	r *bufio.Reader

	readMu  sync.Mutex // inline readers, one at a time
	mu      sync.Mutex
	next    int64
	waiting map[string]chan response
	err     error // set once the reader has stopped
	started bool
	done    chan struct{}
}

type response struct {
	Result json.RawMessage `json:"result"`
	Error  *HostError      `json:"error"`
}

func newHostClient(r io.Reader, w *lineWriter) *HostClient {
	return &HostClient{w: w, r: bufio.NewReaderSize(r, 64<<10), waiting: map[string]chan response{}, done: make(chan struct{})}
}

// read delivers each response line to the request of its id until the
// input ends.
func (h *HostClient) read() {
	defer close(h.done)
	for h.readOne() == nil {
	}
	h.stop()
}

// readOne reads one response line and delivers it to the request of its
// id.
func (h *HostClient) readOne() error {
	line, err := h.r.ReadBytes('\n')
	if len(bytes.TrimSpace(line)) > 0 {
		var m struct {
			ID json.RawMessage `json:"id"`
			response
		}
		if json.Unmarshal(line, &m) == nil {
			h.mu.Lock()
			ch := h.waiting[string(bytes.TrimSpace(m.ID))]
			delete(h.waiting, string(bytes.TrimSpace(m.ID)))
			h.mu.Unlock()
			if ch != nil {
				ch <- m.response
			}
		}
	}
	return err
}

// stop fails the requests waiting once the input has ended.
func (h *HostClient) stop() {
	h.mu.Lock()
	h.err = ErrNoHost
	for id, ch := range h.waiting {
		close(ch)
		delete(h.waiting, id)
	}
	h.mu.Unlock()
}

// inline says that responses are read by the caller that waits for one
// rather than by a goroutine. A WASM module (GOOS=wasip1) has one thread,
// and lathe answers each request before its write returns: a goroutine
// that read on would find standard input empty, which on wasip1 is the end
// of input, not a wait.
var inline = runtime.GOOS == "wasip1"

// close stops waiting for responses; the reader ends with the input.
func (h *HostClient) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		h.err = ErrNoHost
	}
	for id, ch := range h.waiting {
		close(ch)
		delete(h.waiting, id)
	}
}

// Call sends one request of the host API and decodes its result into
// result (nil to drop it). The typed methods are calls of it; it serves a
// method they do not cover.
func (h *HostClient) Call(ctx context.Context, method string, params, result any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("host: %s: %w", method, err)
	}
	ch := make(chan response, 1)
	h.mu.Lock()
	if h.err != nil {
		h.mu.Unlock()
		return h.err
	}
	if !h.started {
		// The reader starts with the first request: a tool that never
		// asks leaves its input alone.
		h.started = true
		if !inline {
			go h.read()
		}
	}
	h.next++
	id := strconv.FormatInt(h.next, 10)
	h.waiting[id] = ch
	h.mu.Unlock()
	forget := func() {
		h.mu.Lock()
		delete(h.waiting, id)
		h.mu.Unlock()
	}
	req := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{"2.0", json.RawMessage(id), method, p}
	if err := h.w.encode(req); err != nil {
		forget()
		return fmt.Errorf("host: %s: %w", method, err)
	}
	if inline {
		h.readMu.Lock()
		for len(ch) == 0 {
			if h.readOne() != nil {
				h.stop()
				break
			}
		}
		h.readMu.Unlock()
	}
	select {
	case r, ok := <-ch:
		switch {
		case !ok:
			return ErrNoHost
		case r.Error != nil:
			return r.Error
		case result != nil:
			if err := json.Unmarshal(r.Result, result); err != nil {
				return fmt.Errorf("host: %s: the result does not decode: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		forget()
		return ctx.Err()
	}
}

// ReadFile reads the whole of a file of the workspace, in as many requests
// as the host's read limit needs.
func (h *HostClient) ReadFile(ctx context.Context, path string) ([]byte, error) {
	var data []byte
	for {
		var r wire.ReadResult
		p := wire.ReadParams{Path: path, Offset: int64(len(data))}
		if err := h.Call(ctx, wire.MethodRead, p, &r); err != nil {
			return nil, err
		}
		data = append(data, r.Data...)
		if r.EOF || len(r.Data) == 0 {
			return data, nil
		}
	}
}

// WriteFile writes data to a file of the workspace, replacing it; its
// directory must exist.
func (h *HostClient) WriteFile(ctx context.Context, path string, data []byte) error {
	return h.Call(ctx, wire.MethodWrite, wire.WriteParams{Path: path, Data: data}, nil)
}

// List lists a directory of the workspace, sorted by name.
func (h *HostClient) List(ctx context.Context, path string) ([]FileInfo, error) {
	var r wire.ListResult
	if err := h.Call(ctx, wire.MethodList, wire.PathParams{Path: path}, &r); err != nil {
		return nil, err
	}
	return r.Entries, nil
}

// Stat describes a file of the workspace.
func (h *HostClient) Stat(ctx context.Context, path string) (FileInfo, error) {
	var fi FileInfo
	err := h.Call(ctx, wire.MethodStat, wire.PathParams{Path: path}, &fi)
	return fi, err
}

// Remove removes a file, or an empty directory; with recursive, a
// directory and everything in it.
func (h *HostClient) Remove(ctx context.Context, path string, recursive bool) error {
	return h.Call(ctx, wire.MethodRemove, wire.RemoveParams{Path: path, Recursive: recursive}, nil)
}

// Fetch makes an HTTP request through the host.
func (h *HostClient) Fetch(ctx context.Context, req FetchRequest) (*FetchResponse, error) {
	var r FetchResponse
	if err := h.Call(ctx, wire.MethodFetch, req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Run runs a program through the host, under its sandbox profile. A
// program that ran and failed is a result with its exit code, not an
// error.
func (h *HostClient) Run(ctx context.Context, req RunRequest) (*RunResult, error) {
	var r RunResult
	if err := h.Call(ctx, wire.MethodRun, req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Getenv reads a variable of lathe's environment that the tool may see;
// ok is false when it is not set.
func (h *HostClient) Getenv(ctx context.Context, name string) (value string, ok bool, err error) {
	var r wire.EnvResult
	err = h.Call(ctx, wire.MethodEnv, wire.EnvParams{Name: name}, &r)
	return r.Value, r.Set, err
}

// Log sends a log line at an MCP level ("debug", "info", "warning",
// "error"…).
func (h *HostClient) Log(ctx context.Context, level, message string) error {
	return h.Call(ctx, wire.MethodLog, wire.LogParams{Level: level, Message: message}, nil)
}

// Progress reports progress (total 0: unknown), with MCP's meaning.
func (h *HostClient) Progress(ctx context.Context, progress, total float64, message string) error {
	return h.Call(ctx, wire.MethodProgress, wire.ProgressParams{Progress: progress, Total: total, Message: message}, nil)
}

// Ask asks the person a question in the middle of the call; schema, which
// may be nil, is a flat JSON Schema object of the answer's fields.
func (h *HostClient) Ask(ctx context.Context, message string, schema json.RawMessage) (*AskResult, error) {
	var r AskResult
	err := h.Call(ctx, wire.MethodAsk, wire.AskParams{Message: message, Schema: schema}, &r)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// lineWriter writes JSON values one per line, one at a time, so that host
// requests and the answer never interleave on standard output.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) encode(v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.w.Write(b.Bytes())
	return err
}

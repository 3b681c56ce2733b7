// Package wire holds the messages of lathe's host API (the project's
// docs/host.md), for both ends: lathe's host (package host) and the client
// a tool carries (package sdk). It imports only the standard library, so a
// tool binary, native or WASM, carries nothing of lathe's own side.
package wire

import "encoding/json"

// The host API's messages are JSON-RPC 2.0 objects, one per line. A
// confined tool sends a [Request]; lathe answers with a [Response] of the
// same ID. docs/host.md describes every method; this file holds the wire
// types both ends share (the SDK's client and lathe's runtimes).

// Version is the version of the host API this lathe speaks. A process
// request's context carries it (context.host) when the host API is
// available to the tool.
const Version = 1

// Methods of the host API.
const (
	MethodRead     = "fs/read"   // ReadParams → ReadResult
	MethodWrite    = "fs/write"  // WriteParams → WriteResult
	MethodList     = "fs/list"   // PathParams → ListResult
	MethodStat     = "fs/stat"   // PathParams → FileInfo
	MethodRemove   = "fs/remove" // RemoveParams → {}
	MethodFetch    = "net/fetch" // FetchParams → FetchResult
	MethodRun      = "proc/run"  // RunParams → RunResult
	MethodEnv      = "env/get"   // EnvParams → EnvResult
	MethodLog      = "log"       // LogParams → {}
	MethodProgress = "progress"  // ProgressParams → {}
	MethodAsk      = "ask"       // AskParams → AskResult
)

// Request is one host request.
type Request struct {
	JSONRPC string          `json:"jsonrpc"` // "2.0"
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// Response answers a [Request]: Result or Error, never both.
type Response struct {
	JSONRPC string          `json:"jsonrpc"` // "2.0"
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Error codes of the host API, besides JSON-RPC's own (-32700 parse
// error, -32600 invalid request, -32601 method not found, -32602 invalid
// params).
const (
	// CodeDenied: the tool's permissions or the policy refused the operation.
	CodeDenied = -32001
	// CodeFailed: the operation was allowed and failed (no such file, a
	// connection refused); Data may hold an errno-like name in "reason".
	CodeFailed = -32002
	// CodeEnded: the call the request belonged to has ended.
	CodeEnded = -32003
	// CodeTooLarge: the request or its answer is over a limit.
	CodeTooLarge = -32004
)

// Error is a host API error. It is also a Go error.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// ReadParams asks for a file's bytes: Length bytes from Offset (Length 0:
// to the end, within the host's read limit).
type ReadParams struct {
	Path   string `json:"path"`
	Offset int64  `json:"offset,omitempty"`
	Length int64  `json:"length,omitempty"`
}

// ReadResult holds the bytes read (base64 in JSON) and whether the file
// ends there.
type ReadResult struct {
	Data []byte `json:"data"`
	EOF  bool   `json:"eof"`
}

// WriteParams writes Data to Path, creating it (and no parent directory
// unless MakeDirs), replacing it unless Append.
type WriteParams struct {
	Path     string `json:"path"`
	Data     []byte `json:"data"`
	Append   bool   `json:"append,omitempty"`
	MakeDirs bool   `json:"make_dirs,omitempty"`
}

// WriteResult says how many bytes were written.
type WriteResult struct {
	Written int64 `json:"written"`
}

// PathParams names one path.
type PathParams struct {
	Path string `json:"path"`
}

// RemoveParams removes Path; a directory only if empty, unless Recursive.
type RemoveParams struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive,omitempty"`
}

// FileInfo describes one file. Type is "file", "dir", "symlink" or "other".
type FileInfo struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Size    int64  `json:"size"`
	Mode    uint32 `json:"mode"`
	ModTime string `json:"mod_time"` // RFC 3339
}

// ListResult lists a directory, sorted by name; Truncated says that the
// host's limit cut it.
type ListResult struct {
	Entries   []FileInfo `json:"entries"`
	Truncated bool       `json:"truncated,omitempty"`
}

// FetchParams is an HTTP request. Method defaults to GET.
type FetchParams struct {
	URL     string            `json:"url"`
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    []byte            `json:"body,omitempty"`
}

// FetchResult is the response, its body cut at the host's limit
// (Truncated then says so).
type FetchResult struct {
	Status    int               `json:"status"`
	Headers   map[string]string `json:"headers,omitempty"`
	Body      []byte            `json:"body"`
	Truncated bool              `json:"truncated,omitempty"`
}

// RunParams runs a program, never through a shell: Argv[0] is looked up
// in PATH. Dir is relative to the workspace.
type RunParams struct {
	Argv  []string `json:"argv"`
	Stdin []byte   `json:"stdin,omitempty"`
	Dir   string   `json:"dir,omitempty"`
}

// RunResult is how the program ended and what it wrote (each stream cut at
// the host's limit; Truncated then says so). ExitCode is -1 when a signal
// ended the program.
type RunResult struct {
	ExitCode  int    `json:"exit_code"`
	Stdout    []byte `json:"stdout"`
	Stderr    []byte `json:"stderr"`
	Truncated bool   `json:"truncated,omitempty"`
}

// EnvParams names a variable.
type EnvParams struct {
	Name string `json:"name"`
}

// EnvResult is its value; Set is false when lathe's environment lacks it.
type EnvResult struct {
	Value string `json:"value"`
	Set   bool   `json:"set"`
}

// LogParams is a log line of the tool, with MCP's levels.
type LogParams struct {
	Level   string `json:"level,omitempty"`
	Message string `json:"message"`
}

// ProgressParams reports progress, with MCP's meaning.
type ProgressParams struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// AskParams asks the person a question mid-call (elicitation): Schema is
// a flat JSON Schema object of primitive properties.
type AskParams struct {
	Message string          `json:"message"`
	Schema  json.RawMessage `json:"schema,omitempty"`
}

// AskResult is the person's answer: Action "accept" (Content holds it),
// "decline" or "cancel".
type AskResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

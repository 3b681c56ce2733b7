// Package sdk is for people who write lathe tools in Go. A tool binary built
// with it speaks lathe's process protocol (the project's docs/protocol.md):
// it describes its tools when asked, runs them, and asks questions.
//
// A binary with one typed tool:
//
//	type greetIn struct {
//		Name string `json:"name" jsonschema:"description=Who to greet"`
//	}
//
//	func main() {
//		sdk.Serve(sdk.Func(sdk.Definition{Name: "greet", Summary: "Greet someone."},
//			func(ctx context.Context, in greetIn) (string, error) {
//				return "hello, " + in.Name, nil
//			}))
//	}
//
// and its configuration in lathe.toml, which needs no parameters because the
// binary describes them:
//
//	[toolsets.mine]
//	command = ["./bin/mytools"]
//
// [Func] infers the input schema from the In type, as lathe's builtin tools
// do (json tags name the properties, jsonschema tags add descriptions,
// defaults, enums and bounds). What the function returns becomes the result:
// a string is text, a *tool.Result is used as it is, and any other value is
// sent as structured JSON with the same JSON as text. An error becomes an
// error result the model reads; [Transient] marks one worth retrying.
//
// A tool that needs to know something calls [Ask] (or [AskBool]); the first
// run returns the question to the caller, who runs the tool again with the
// answer, and then Ask returns it. [Root], [CallID] and [Options] give the
// rest of the request's context.
//
// A VFS tool (runtime = "vfs" in lathe.toml) runs confined, with no
// workspace, network or environment of its own, and asks lathe for what it
// needs through [Host]: files, URLs, commands, variables, logs, progress
// and questions, each checked against the tool's permissions. The same
// source built with GOOS=wasip1 GOARCH=wasm is a WASM tool that reaches the
// host the same way.
//
// [Serve] handles every action of the protocol and exits; [Handle] serves
// one request between any reader and writer, for tests.
package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"strings"
	"syscall"

	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/schema/infer"
	"github.com/lathe-tools/lathe/tool"
)

// Definition is what a model sees of a tool, less its schemas, which [Func]
// infers.
type Definition struct {
	// Name is the tool's name in the binary; lathe may add a prefix.
	Name string
	// Summary is one short line.
	Summary string
	// Description is the full text: when to use the tool, what it returns.
	Description string
	// Annotations are hints about the tool's effects, as in MCP.
	Annotations tool.Annotations
	// Permissions, for a VFS or WASM tool, say what it needs of lathe's
	// host API ([Host]), in the syntax of lathe.toml's read, write, net,
	// env and run keys. lathe shows them to the person beside what the
	// configuration grants; they grant nothing by themselves.
	Permissions *protocol.Permissions
}

// Tool is one tool of a binary, made by [Func].
type Tool struct {
	def    Definition
	schema func() (protocol.ToolSchema, error)
	run    func(ctx context.Context, args json.RawMessage) (*tool.Result, error)
	format func(args json.RawMessage) (string, error)
}

// Name returns the tool's name.
func (t Tool) Name() string { return t.def.Name }

// Schema returns the definition the binary gives lathe for the tool: its
// name, texts and annotations, and the schemas inferred from its types.
func (t Tool) Schema() (protocol.ToolSchema, error) { return t.schema() }

// Func makes a tool of fn. The input schema is inferred from In and, when
// Out is a struct, the output schema from Out. The schemas are inferred only
// when lathe asks for them, since a tool binary starts once per call and
// most calls do not ask; a type that has no schema (a channel field, a type
// that contains itself) makes the schema action fail.
func Func[In, Out any](def Definition, fn func(ctx context.Context, in In) (Out, error)) Tool {
	if def.Name == "" || fn == nil {
		panic("sdk.Func: a tool needs a name and a function")
	}
	return Tool{
		def: def,
		schema: func() (protocol.ToolSchema, error) {
			s := protocol.ToolSchema{Name: def.Name, Summary: def.Summary, Description: def.Description, Annotations: def.Annotations,
				Permissions: def.Permissions}
			var err error
			if s.Parameters, err = infer.ForType(reflect.TypeFor[In]()); err != nil {
				return s, fmt.Errorf("tool %s: input schema: %w", def.Name, err)
			}
			if t := reflect.TypeFor[Out](); tool.StructuredType(t) {
				if s.OutputSchema, err = infer.ForType(t); err != nil {
					return s, fmt.Errorf("tool %s: output schema: %w", def.Name, err)
				}
			}
			return s, nil
		},
		run: func(ctx context.Context, args json.RawMessage) (*tool.Result, error) {
			var in In
			if err := decode(args, &in); err != nil {
				return nil, err
			}
			out, err := fn(ctx, in)
			if err != nil {
				return nil, err
			}
			r, err := tool.ResultFor(out)
			if err != nil {
				return nil, fmt.Errorf("cannot encode the tool's output: %w", err)
			}
			return r, nil
		},
	}
}

// Format returns t with a function that renders its arguments for people,
// the answer to the format_arguments action. Without one, the arguments are
// shown as compact JSON.
func Format[In any](t Tool, f func(in In) string) Tool {
	t.format = func(args json.RawMessage) (string, error) {
		var in In
		if err := decode(args, &in); err != nil {
			return "", err
		}
		return f(in), nil
	}
	return t
}

func decode(args json.RawMessage, v any) error {
	if len(args) == 0 {
		return nil
	}
	if err := infer.Unmarshal(args, v); err != nil {
		return fmt.Errorf("the arguments do not fit the tool's input: %w", err)
	}
	return nil
}

// Serve reads one request from standard input, answers it on standard
// output and exits: with status 0 once it has answered, whatever the answer,
// and with status 2 when the request cannot be read. SIGTERM and interrupts
// cancel the context the tool runs with; lathe sends SIGTERM when a call
// times out or is cancelled and SIGKILL a grace period later.
func Serve(tools ...Tool) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := Handle(ctx, os.Stdin, os.Stdout, tools...)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(0)
}

// Handle reads one request from in, runs it against tools and writes the
// answer to out. It returns an error only when the request cannot be read
// or the answer cannot be written; everything else, including a panic in a
// tool, is an answer.
//
// The request is the first JSON value of in; Handle reads no further
// itself. When the request offers the host API (a VFS or WASM tool's
// does), the rest of in carries the host's responses and out its requests
// as well as the answer: see [Host].
func Handle(ctx context.Context, in io.Reader, out io.Writer, tools ...Tool) error {
	// One value, not all of in: a VFS tool's standard input stays open for
	// the host's responses.
	dec := json.NewDecoder(in)
	var req protocol.Request
	if err := dec.Decode(&req); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("standard input is empty")
		}
		return fmt.Errorf("this is a lathe tool: it reads one protocol request (JSON) on standard input, and %w", err)
	}
	w := &lineWriter{w: out}
	var err error
	if req.Context.Host >= 1 {
		hc := newHostClient(io.MultiReader(dec.Buffered(), in), w)
		defer hc.close()
		ctx = context.WithValue(ctx, hostKey{}, hc)
	}
	var ans any
	switch {
	case req.Protocol > protocol.Version:
		ans = protocol.Failure(fmt.Sprintf("protocol version %d is not supported; this tool speaks version %d",
			req.Protocol, protocol.Version), nil, false)
	case req.Action == protocol.ActionSchema:
		s := protocol.SchemaAnswer{Tools: make([]protocol.ToolSchema, len(tools))}
		for i, t := range tools {
			if s.Tools[i], err = t.schema(); err != nil {
				// Not an answer: a binary that cannot describe itself is
				// broken, and lathe says so with this message.
				return err
			}
		}
		ans = s
	default:
		ans = handle(ctx, &req, tools)
	}
	if err := w.encode(ans); err != nil {
		return fmt.Errorf("writing the answer: %w", err)
	}
	return nil
}

func handle(ctx context.Context, req *protocol.Request, tools []Tool) *protocol.Answer {
	i := slices.IndexFunc(tools, func(t Tool) bool { return t.def.Name == req.Tool })
	if i < 0 {
		names := make([]string, len(tools))
		for i, t := range tools {
			names[i] = t.def.Name
		}
		return protocol.Failure(fmt.Sprintf("no tool is named %q; this binary holds: %s", req.Tool, strings.Join(names, ", ")), nil, false)
	}
	t := tools[i]
	switch req.Action {
	case protocol.ActionRun, "":
		ctx = context.WithValue(ctx, requestKey{}, req)
		res, err := call(ctx, t, req.Arguments)
		if err != nil {
			return errorAnswer(err)
		}
		return protocol.Success(res)
	case protocol.ActionFormatArguments:
		if t.format == nil {
			return protocol.Success(tool.TextResult(compact(req.Arguments)))
		}
		s, err := t.format(req.Arguments)
		if err != nil {
			return errorAnswer(err)
		}
		return protocol.Success(tool.TextResult(s))
	}
	return protocol.Failure(fmt.Sprintf("unknown action %q", req.Action), nil, false)
}

// call runs the tool, turning a panic into an error.
func call(ctx context.Context, t Tool, args json.RawMessage) (res *tool.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the tool panicked: %v", p)
		}
	}()
	return t.run(ctx, args)
}

func compact(raw json.RawMessage) string {
	var b strings.Builder
	if len(raw) == 0 {
		return "{}"
	}
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	var v any
	if json.Unmarshal(raw, &v) != nil || enc.Encode(v) != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// errorAnswer turns a tool's error into the answer: a question for [Ask]'s
// error, and otherwise an error answer whose trace holds the messages of the
// causes that err wraps.
func errorAnswer(err error) *protocol.Answer {
	var q *needInput
	if errors.As(err, &q) {
		return protocol.NeedsInput(q.question)
	}
	var trace []string
	msg := err.Error()
	last := msg
	for cause := errors.Unwrap(err); cause != nil; cause = errors.Unwrap(cause) {
		// A wrapper that adds nothing (Transient's) says nothing new.
		if m := cause.Error(); m != last {
			trace = append(trace, m)
			last = m
		}
	}
	var te *transientError
	transient := errors.As(err, &te)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		transient = true
	}
	return protocol.Failure(msg, trace, transient)
}

// transientError marks an error worth retrying.
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// Transient marks err as transient: the same call may succeed later (a
// network error, a busy resource). The model is told so.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &transientError{err}
}

type requestKey struct{}

func request(ctx context.Context) *protocol.Request {
	r, _ := ctx.Value(requestKey{}).(*protocol.Request)
	if r == nil {
		return &protocol.Request{}
	}
	return r
}

// Root returns the workspace root of the call, which is also the process's
// working directory.
func Root(ctx context.Context) string { return request(ctx).Context.Root }

// CallID returns the id the caller gave the call, or "".
func CallID(ctx context.Context) string { return request(ctx).Context.CallID }

// Options returns the tool's options from lathe's configuration
// ([tools.NAME.options]); nil when there are none.
func Options(ctx context.Context) map[string]any { return request(ctx).Context.Options }

// needInput is the error [Ask] returns when the call carries no answer yet.
type needInput struct{ question tool.Question }

func (e *needInput) Error() string { return "needs input: " + e.question.Text }

// Ask returns the answer to q if the call carries one. Otherwise it returns
// an error that the tool must return as its own; the SDK turns it into a
// question for the caller, who runs the tool again with the answer:
//
//	a, err := sdk.Ask(ctx, tool.Question{ID: "branch", Text: "Which branch?",
//		Kind: tool.QuestionSelect, Options: []string{"main", "dev"}})
//	if err != nil {
//		return "", err
//	}
//
// The tool runs from the start each time, so whatever it did before asking
// it does again; ask before doing anything that cannot be repeated.
func Ask(ctx context.Context, q tool.Question) (any, error) {
	if a, ok := request(ctx).Answers[q.ID]; ok {
		// An answer the question does not offer (a select answer that
		// is not one of its options) reaches the caller as an invalid
		// argument it can correct, never the function.
		if err := q.CheckAnswer(a); err != nil {
			return nil, &tool.Error{Kind: tool.KindInvalidArguments, Stage: "answer", Message: err.Error()}
		}
		return a, nil
	}
	if q.Kind == "" {
		q.Kind = tool.QuestionText
	}
	return nil, &needInput{question: q}
}

// AskBool asks a yes/no question and returns the answer: true, "true",
// "yes", "y" and "1" are yes, whatever their case; false, "false", "no", "n"
// and "0" are no, and any other answer is an error (see [Ask]).
func AskBool(ctx context.Context, id, text string) (bool, error) {
	a, err := Ask(ctx, tool.Question{ID: id, Text: text, Kind: tool.QuestionBoolean})
	if err != nil {
		return false, err
	}
	switch v := a.(type) {
	case bool:
		return v, nil
	case string:
		switch strings.ToLower(v) {
		case "true", "yes", "y", "1":
			return true, nil
		}
	}
	return false, nil
}

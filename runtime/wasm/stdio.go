package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/lathe-tools/lathe/host"
)

// stdio is a module's standard input and output: the request, then the
// host API's JSON-RPC lines, as a VFS tool speaks it. The module runs on
// the caller's goroutine and its reads and writes are calls into this, so
// a host request written on standard output is answered before the write
// returns, and the answer is waiting on standard input when the module
// reads it. Standard input holds what has been sent and no more: a module
// that reads past it gets end of file rather than blocking.
type stdio struct {
	ctx  context.Context
	sess *host.Session
	stop context.CancelFunc

	in  []byte // what the module has yet to read
	off int

	line     []byte // an unfinished line of standard output
	out      []byte // standard output that is not a host request
	max      int
	overflow bool // the answer, or a line, went past its cap
	flooded  bool // the module sent requests without reading their answers
}

// maxRequestLine bounds one line of standard output that may be a host
// request: an fs/write of the host's largest size, in base64, and room
// for the rest of the request.
var maxRequestLine = int(host.DefaultLimits().Write)*4/3 + 1<<20

// maxPendingInput bounds the answers the module has not read yet: one
// that asks without reading would otherwise grow lathe's memory without
// end.
const maxPendingInput = 64 << 20

func newStdio(ctx context.Context, sess *host.Session, req []byte, max int, stop context.CancelFunc) *stdio {
	return &stdio{ctx: ctx, sess: sess, stop: stop, in: append(req, '\n'), max: max}
}

// errOverflow is what a write past the cap returns to the module.
var errOverflow = errors.New("standard output is over its limit")

func (s *stdio) Read(p []byte) (int, error) {
	if s.off >= len(s.in) {
		return 0, io.EOF
	}
	n := copy(p, s.in[s.off:])
	s.off += n
	if s.off == len(s.in) {
		s.in, s.off = s.in[:0], 0
	}
	return n, nil
}

func (s *stdio) Write(p []byte) (int, error) {
	if s.overflow || s.flooded {
		return 0, errOverflow
	}
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.line = append(s.line, p...)
			break
		}
		s.line = append(s.line, p[:i+1]...)
		p = p[i+1:]
		s.endLine()
	}
	// The answer is capped; a line may be longer while it may still be a
	// host request (an fs/write of the host's largest size).
	if len(s.out) > s.max || len(s.line) > max(s.max, maxRequestLine) {
		s.overflow = true
	}
	if s.overflow || s.flooded {
		s.stop()
		return 0, errOverflow
	}
	return n, nil
}

// endLine takes a finished line: a host request is answered; anything
// else is part of the answer.
func (s *stdio) endLine() {
	line := s.line
	s.line = s.line[:0]
	if req, ok := hostRequest(line); ok {
		s.answer(req)
		return
	}
	s.out = append(s.out, line...)
}

// flush keeps an unfinished last line, once the module has ended.
func (s *stdio) flush() {
	s.out = append(s.out, s.line...)
	s.line = nil
}

// hostRequest reads a line as a host request: a JSON object with
// "jsonrpc" and "method" and no "type" (an answer has one).
func hostRequest(line []byte) (*host.Request, bool) {
	t := bytes.TrimSpace(line)
	if len(t) == 0 || t[0] != '{' || !bytes.Contains(t, []byte(`"jsonrpc"`)) {
		return nil, false
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(t, &probe) != nil {
		return nil, false
	}
	if _, typed := probe["type"]; typed {
		return nil, false
	}
	var req host.Request
	if json.Unmarshal(t, &req) != nil || req.Method == "" {
		return nil, false
	}
	return &req, true
}

func (s *stdio) answer(req *host.Request) {
	if len(s.in)-s.off > maxPendingInput {
		s.flooded = true
		return
	}
	resp := do(s.ctx, s.sess, req)
	if len(req.ID) == 0 {
		return // a notification has no answer
	}
	b, _ := json.Marshal(resp)
	s.in = append(s.in, b...)
	s.in = append(s.in, '\n')
}

// do runs one host request through the call's session.
func do(ctx context.Context, sess *host.Session, req *host.Request) *host.Response {
	resp := &host.Response{JSONRPC: "2.0", ID: req.ID}
	if sess == nil {
		resp.Error = &host.Error{Code: -32601, Message: "this tool has no host API"}
		return resp
	}
	if req.JSONRPC != "2.0" {
		resp.Error = &host.Error{Code: -32600, Message: `a host request must have "jsonrpc": "2.0"`}
		return resp
	}
	res, err := sess.Do(ctx, req.Method, req.Params)
	if err != nil {
		var he *host.Error
		if !errors.As(err, &he) {
			he = &host.Error{Code: host.CodeFailed, Message: err.Error()}
		}
		resp.Error = he
		return resp
	}
	if len(res) == 0 {
		res = json.RawMessage("{}")
	}
	resp.Result = res
	return resp
}

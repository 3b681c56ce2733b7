package vfs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
)

// budgetUnit is the size of a request that takes one token of the
// pending-bytes budget.
const budgetUnit = 64 << 10

// JSON-RPC's own error codes that the connection answers with.
const (
	codeParse          = -32700
	codeInvalidRequest = -32600
)

// conn is one call's side of the tool's stdio. It is the process's standard
// output: os/exec's copier writes to it, it splits lines, answers each host
// request on a goroutine of its own with the call's session, and keeps the
// rest, the answer among it. Responses go to the process's standard input.
type conn struct {
	ctx     context.Context // the requests'; ends with the call
	cancel  context.CancelFunc
	sess    *host.Session // nil: every request is denied
	maxLine int
	maxOut  int
	pending chan struct{} // a slot per request being answered
	// budget holds a token per budgetUnit bytes of the requests being
	// answered, up to MaxPendingBytes.
	budget chan struct{}

	// line and rest belong to Write, which one goroutine calls, and are
	// read once the process has been waited for.
	line []byte
	rest []byte

	mu      sync.Mutex
	proc    *process.Proc // nil until Start has returned
	failure error         // set once: why the call fails
	ended   bool          // the session has ended: no request runs
	// answer is the first line of output that is a protocol answer; it
	// ends the call.
	answer []byte

	wmu sync.Mutex // one response line at a time
	in  *os.File
	wg  sync.WaitGroup // the request handlers and the first line's writer
}

func newConn(ctx context.Context, sess *host.Session, in *os.File, o Options) *conn {
	c := &conn{sess: sess, in: in, maxLine: o.MaxRequestBytes, maxOut: o.MaxOutputBytes,
		pending: make(chan struct{}, o.MaxPending), budget: make(chan struct{}, max(1, o.MaxPendingBytes/budgetUnit))}
	c.ctx, c.cancel = context.WithCancel(ctx)
	return c
}

// started tells the connection the process to kill when the call fails;
// one that failed before Start returned is killed now.
func (c *conn) started(p *process.Proc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.proc = p
	if c.failure != nil {
		p.Kill()
	}
}

// fail records why the call fails, once, and kills the process.
func (c *conn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failure == nil {
		c.failure = err
	}
	if c.proc != nil {
		c.proc.Kill()
	}
}

func (c *conn) failed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failure != nil
}

// send writes the request, the first line of standard input, without
// holding up the call: a tool that reads nothing must not block lathe.
func (c *conn) send(line []byte) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.wmu.Lock()
		defer c.wmu.Unlock()
		c.in.Write(line)
	}()
}

// Write splits the process's output into lines. It never fails: past a
// limit the call fails and the rest is discarded, so that the process
// neither fills memory nor blocks on a full pipe.
func (c *conn) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && !c.failed() {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if len(c.line)+len(chunk) > c.maxLine {
			c.line = nil
			// The kill first: a tool that reads nothing would hold up
			// the answer below until the pipe breaks.
			c.fail(fmt.Errorf("the tool wrote a line of more than %d bytes: %w", c.maxLine, ErrTooLarge))
			c.respond(nil, nil, &host.Error{Code: host.CodeTooLarge,
				Message: fmt.Sprintf("a line of more than %d bytes; the call fails", c.maxLine)})
			break
		}
		c.line = append(c.line, chunk...)
		if i < 0 {
			break
		}
		c.handle(c.line)
		c.line = c.line[:0]
		p = p[i+1:]
	}
	return n, nil
}

// flush takes an unfinished last line as output: the process is gone, and
// a request it did not end with a newline will not be answered.
func (c *conn) flush() {
	if len(c.line) > 0 && !c.failed() {
		c.output(c.line)
	}
	c.line = nil
}

// handle takes one line: a host request (an object with "jsonrpc") is
// answered, anything else is output. A line that looks meant as a request
// and does not decode gets JSON-RPC's parse error.
func (c *conn) handle(line []byte) {
	t := bytes.TrimSpace(line)
	if len(t) > 0 && t[0] == '{' {
		var m struct {
			JSONRPC *string         `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Params  json.RawMessage `json:"params"`
		}
		err := json.Unmarshal(t, &m)
		switch {
		case err == nil && m.JSONRPC != nil:
			c.request(*m.JSONRPC, m.ID, m.Method, m.Params, len(t))
			return
		case err != nil && bytes.Contains(t, []byte(`"jsonrpc"`)):
			c.respond(nil, nil, &host.Error{Code: codeParse, Message: "parse error: " + err.Error()})
			return
		}
	}
	c.output(line)
}

// output keeps a line that is not a request, within the output limit. The
// first line that is a protocol answer ends the call: the session ends, so
// that nothing the tool asks afterwards runs, and the process is killed,
// with whatever it left running and holding its output.
func (c *conn) output(line []byte) {
	if c.answer != nil {
		return // past the answer nothing counts
	}
	if len(c.rest)+len(line)+1 > c.maxOut {
		c.rest = nil
		c.fail(fmt.Errorf("the tool wrote more than %d bytes to standard output: %w", c.maxOut, process.ErrOutputLimit))
		return
	}
	c.rest = append(append(c.rest, line...), '\n')
	if _, ok, _ := protocol.ParseAnswer(line); ok {
		c.answer = bytes.TrimSpace(c.rest[len(c.rest)-len(line)-1:])
		c.endSession()
		c.mu.Lock()
		if c.proc != nil {
			c.proc.Kill()
		}
		c.mu.Unlock()
	}
}

// endSession ends the host session, once: from here on every request gets
// CodeEnded without running, and the requests in flight are cancelled.
func (c *conn) endSession() {
	c.mu.Lock()
	was := c.ended
	c.ended = true
	c.mu.Unlock()
	if !was && c.sess != nil {
		c.sess.End()
	}
	c.cancel()
}

// validID reports whether id is one JSON-RPC allows: a string, a number
// or null.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return true
	}
	switch b := id[0]; {
	case b == '"', b == '-', b >= '0' && b <= '9':
		return true
	}
	return string(id) == "null"
}

// request answers one host request on a goroutine of its own. Once
// MaxPending requests, or MaxPendingBytes of them, are being answered it
// waits, and so reads no more of the process's output: a flood of requests
// fills the pipe and blocks the tool, never lathe's memory.
func (c *conn) request(version string, id json.RawMessage, method string, params json.RawMessage, size int) {
	if !validID(id) {
		c.respond(nil, nil, &host.Error{Code: codeInvalidRequest, Message: "invalid request: an id must be a string, a number or null"})
		return
	}
	if version != "2.0" || method == "" {
		c.respond(id, nil, &host.Error{Code: codeInvalidRequest, Message: `invalid request: want "jsonrpc": "2.0" and a method`})
		return
	}
	c.mu.Lock()
	ended := c.ended
	c.mu.Unlock()
	if ended {
		c.respond(id, nil, &host.Error{Code: host.CodeEnded, Message: "the call has ended"})
		return
	}
	// A request takes its slot and then its share of the byte budget,
	// capped at the whole budget so that one large request alone runs.
	tokens := min(size/budgetUnit+1, cap(c.budget))
	release := func(slot bool, n int) {
		for range n {
			<-c.budget
		}
		if slot {
			<-c.pending
		}
	}
	select {
	case c.pending <- struct{}{}:
	case <-c.ctx.Done():
		c.respond(id, nil, &host.Error{Code: host.CodeEnded, Message: "the call has ended"})
		return
	}
	for i := range tokens {
		select {
		case c.budget <- struct{}{}:
		case <-c.ctx.Done():
			release(true, i)
			c.respond(id, nil, &host.Error{Code: host.CodeEnded, Message: "the call has ended"})
			return
		}
	}
	c.mu.Lock()
	ended = c.ended
	if !ended {
		c.wg.Add(1)
	}
	c.mu.Unlock()
	if ended {
		release(true, tokens)
		c.respond(id, nil, &host.Error{Code: host.CodeEnded, Message: "the call has ended"})
		return
	}
	go func() {
		defer c.wg.Done()
		defer release(true, tokens)
		var res json.RawMessage
		var err error
		if c.sess == nil {
			err = &host.Error{Code: host.CodeDenied, Message: "the host API is available to the run action only"}
		} else {
			res, err = c.sess.Do(c.ctx, method, params)
		}
		if len(id) > 0 {
			c.respond(id, res, err)
		}
	}()
}

// respond writes the response to id as one line of the process's standard
// input. A process that is gone, or reads nothing, gets nothing: a write to
// its pipe fails, or waits until the call ends and the pipe is closed.
func (c *conn) respond(id, res json.RawMessage, err error) {
	r := host.Response{JSONRPC: "2.0", ID: id}
	if len(r.ID) == 0 {
		r.ID = json.RawMessage("null")
	}
	if err != nil {
		var he *host.Error
		if !errors.As(err, &he) {
			he = &host.Error{Code: host.CodeFailed, Message: err.Error()}
		}
		r.Error = he
	} else {
		r.Result = res
		if len(bytes.TrimSpace(r.Result)) == 0 {
			r.Result = json.RawMessage("{}")
		}
	}
	line := marshal(r)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.in.Write(line)
}

// end ends the call's host side: the session ends, so no request runs
// after it; the requests in flight are cancelled and waited for; the
// process's standard input is closed.
func (c *conn) end() {
	c.endSession()
	// A response being written to a process that reads nothing holds wmu:
	// closing the pipe first lets that write fail.
	c.in.Close()
	c.wg.Wait()
}

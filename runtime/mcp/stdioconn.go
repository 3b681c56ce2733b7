package mcp

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
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/lathe-tools/lathe/internal/jsonscan"
)

// stdioConn is lathe's side of a session with a server over its standard
// input and output: newline-delimited JSON-RPC, one message per line, as
// the SDK's IOTransport speaks it. It exists for speed on the gateway's
// path. The SDK's connection decodes every line twice (once as a possible
// batch, once as a message), each time with a fresh decoder holding a
// 32 KiB buffer, and hands each line from a reading goroutine to the
// session's through a channel. This one reads lines through one reused
// buffer on the session's reading goroutine, decodes the envelope with one
// pass over the bytes (the params, result and error stay raw, as the SDK
// keeps them, for the SDK to decode), and writes each message and its
// newline with one write.
//
// What it accepts is what the SDK's connection accepts, with two
// differences that only refuse more: a line longer than [maxLine] ends the
// session as soon as it is seen to be too long (the SDK's does too, after
// reading that much), and a JSON-RPC batch (an array of messages, which MCP
// has not had since 2025-06-18) ends it with an error saying so. As with
// the SDK's, any malformed line ends the session: a server that writes
// something that is not a message cannot be trusted to frame the next.
type stdioConn struct {
	in  io.WriteCloser // the server's standard input; closing it ends the server (see proc)
	out io.ReadCloser  // the server's standard output
	src *bufio.Reader  // reads out
	cap *capture       // screens answers to tools/list (screen.go); may be nil

	// Used by Read alone: the jsonrpc2 connection reads from one goroutine.
	line []byte // a message longer than src's buffer, gathered
	rerr error  // the error that ended reading; every later Read returns it

	// Writes are grouped: messages that callers want written while
	// another caller is writing go out together, with one write, when that
	// one is done (see Write).
	wmu     sync.Mutex
	wdone   sync.Cond // signalled (L: &wmu) when a group is written
	pending []byte    // messages waiting for the next write, each with its newline
	spare   []byte    // the buffer of the last write, reused for pending
	writing bool      // a caller is writing groups
	group   uint64    // the group pending joins; the first is 1
	written uint64    // the last group written
	werr    error     // the error that ended writing; every later Write returns it

	closed  atomic.Bool
	closing sync.Once
}

// readBuffer is the size of the buffer lines are read through: a message up
// to this size is decoded where it lies, without a copy.
const readBuffer = 64 << 10

// keepBuffer bounds the buffers a connection keeps between messages: one
// huge message must not pin its size for the session's life.
const keepBuffer = 1 << 20

func newStdioConn(in io.WriteCloser, out io.ReadCloser, cap *capture) *stdioConn {
	c := &stdioConn{in: in, out: out, src: bufio.NewReaderSize(out, readBuffer), cap: cap, group: 1}
	c.wdone.L = &c.wmu
	return c
}

// errTooLarge ends a session whose server wrote a line longer than maxLine.
var errTooLarge = fmt.Errorf("a message from the server is longer than %d bytes", maxLine)

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for c.rerr == nil {
		line, err := c.readLine()
		if err != nil && !errors.Is(err, io.EOF) {
			c.rerr = err
			if c.closed.Load() {
				c.rerr = io.EOF
			}
			return nil, c.rerr
		}
		if err != nil {
			// The server's output ended. A last message without its
			// newline counts, as it does for the SDK's decoder; a part of
			// one is an error.
			c.rerr = io.EOF
		}
		msg := bytes.TrimSpace(line)
		if len(msg) == 0 {
			continue
		}
		if c.cap != nil {
			msg = c.cap.screen(msg)
		}
		m, derr := decodeMessage(msg)
		if derr != nil {
			if c.rerr != nil && !json.Valid(msg) {
				derr = fmt.Errorf("the server's output ended inside a message: %w", io.ErrUnexpectedEOF)
			}
			c.rerr = derr
			return nil, derr
		}
		return m, nil
	}
	return nil, c.rerr
}

// readLine returns the next line, its newline included, or what is left
// at the end of the output. The slice is valid until the next call.
func (c *stdioConn) readLine() ([]byte, error) {
	if cap(c.line) > keepBuffer {
		// The last long message is decoded and copied out: its buffer
		// goes.
		c.line = nil
	}
	chunk, err := c.src.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		// The common case: the whole line lies in the reader's buffer.
		return chunk, err
	}
	line := append(c.line[:0], chunk...)
	for errors.Is(err, bufio.ErrBufferFull) {
		if len(line) > maxLine {
			// Nothing more of it is read: the session ends here.
			return nil, errTooLarge
		}
		chunk, err = c.src.ReadSlice('\n')
		line = append(line, chunk...)
	}
	c.line = line
	if len(line) > maxLine {
		return nil, errTooLarge
	}
	return line, err
}

func (c *stdioConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := encodeMessage(m)
	if err != nil {
		return err
	}
	return c.writeLine(data)
}

// encodeMessage encodes m as the SDK's jsonrpc.EncodeMessage does. A
// request with a number id (or none) and a method of plain characters, the
// shape of every call lathe makes, is written by hand: the SDK's encoding
// reflects over its wire struct with a fresh encoder for each message.
// FuzzEncodeRequest holds the two to the same bytes.
func encodeMessage(m jsonrpc.Message) ([]byte, error) {
	r, ok := m.(*jsonrpc.Request)
	if !ok || !plainMethod(r.Method) {
		return jsonrpc.EncodeMessage(m)
	}
	b := make([]byte, 0, len(r.Method)+len(r.Params)+64)
	b = append(b, `{"jsonrpc":"2.0"`...)
	if r.ID.IsValid() {
		id, ok := r.ID.Raw().(int64)
		if !ok {
			return jsonrpc.EncodeMessage(m)
		}
		b = strconv.AppendInt(append(b, `,"id":`...), id, 10)
	}
	if r.Method != "" {
		b = append(append(append(b, `,"method":"`...), r.Method...), '"')
	}
	if len(r.Params) > 0 {
		// As the SDK's encoder writes a json.RawMessage: checked, and
		// compacted (its encoder escapes no HTML).
		buf := bytes.NewBuffer(append(b, `,"params":`...))
		if err := json.Compact(buf, r.Params); err != nil {
			return jsonrpc.EncodeMessage(m)
		}
		b = buf.Bytes()
	}
	return append(b, '}'), nil
}

// plainMethod reports whether encoding/json writes method as it is,
// between quotes: printable ASCII but for the quote and the backslash.
func plainMethod(method string) bool {
	for i := 0; i < len(method); i++ {
		if c := method[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// writeLine writes data and a newline, and returns once they are written
// (or writing failed). A message is written whole, with its newline, in
// one write, so the server never reads half of one; and the messages of
// callers that come while another caller writes are written together next,
// with one write: a gateway with many calls in flight makes one system call
// for several requests, and the server, reading them at once, wakes once
// for them rather than once each.
func (c *stdioConn) writeLine(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	c.pending = append(append(c.pending, data...), '\n')
	mine := c.group
	if c.writing {
		for c.written < mine && c.werr == nil {
			c.wdone.Wait()
		}
		if c.written >= mine {
			return nil
		}
		return c.werr
	}
	c.writing = true
	// Calls that are ready to run up to their own write do so first and
	// join this one: with the Go scheduler's processors busy (a gateway
	// under load) that is several; with nothing else to run, it costs a
	// return.
	c.wmu.Unlock()
	runtime.Gosched()
	c.wmu.Lock()
	for len(c.pending) > 0 && c.werr == nil {
		buf, g := c.pending, c.group
		c.pending, c.spare = c.spare[:0], nil
		c.group++
		c.wmu.Unlock()
		_, err := c.in.Write(buf)
		c.wmu.Lock()
		if cap(buf) <= keepBuffer {
			c.spare = buf
		}
		if err != nil {
			c.werr = err
		} else {
			c.written = g
		}
		c.wdone.Broadcast()
	}
	c.writing = false
	if c.written >= mine {
		return nil
	}
	return c.werr
}

// Close ends the session: the server's input is closed, which ends the
// server (see [proc.Close]), and then its output, which ends a Read still
// waiting with io.EOF.
func (c *stdioConn) Close() error {
	c.closing.Do(func() {
		c.closed.Store(true)
		c.in.Close()
		c.out.Close()
	})
	return nil
}

func (c *stdioConn) SessionID() string { return "" }

// decodeMessage decodes one JSON-RPC message as the SDK's
// jsonrpc.DecodeMessage does (the same messages accepted, the same
// Request or Response made of them), without its decoder's buffer: the
// bytes are checked whole by encoding/json, and the top-level members are
// found with the screen's scanner. Keys are matched exactly, as the SDK
// matches them. Params and result are copied out of b, which the caller
// reuses.
func decodeMessage(b []byte) (jsonrpc.Message, error) {
	if !json.Valid(b) {
		return nil, fmt.Errorf("the server wrote a line that is not JSON: %q", excerpt(b))
	}
	start := jsonscan.SkipSpace(b, 0)
	if b[start] == '[' {
		return nil, errors.New("the server sent a JSON-RPC batch, which MCP has not had since 2025-06-18")
	}
	if b[start] != '{' {
		return nil, fmt.Errorf("the server wrote a line that is not a JSON-RPC message: %q", excerpt(b))
	}
	var version, id, method, params, result, rerr []byte
	if err := jsonscan.Members(b, start, func(key string, vs, ve int) {
		switch key {
		case "jsonrpc":
			version = b[vs:ve]
		case "id":
			id = b[vs:ve]
		case "method":
			method = b[vs:ve]
		case "params":
			params = b[vs:ve]
		case "result":
			result = b[vs:ve]
		case "error":
			rerr = b[vs:ve]
		}
	}); err != nil {
		return nil, fmt.Errorf("the server wrote a line that is not a JSON-RPC message: %q", excerpt(b))
	}
	if v, err := jsonString(version); err != nil || v != "2.0" {
		return nil, fmt.Errorf("a message from the server has jsonrpc %s, want \"2.0\"", orMissing(version))
	}
	rid, err := decodeID(id)
	if err != nil {
		return nil, err
	}
	if method != nil {
		name, err := jsonString(method)
		if err != nil {
			return nil, fmt.Errorf("a message from the server has method %s, not a string", method)
		}
		return &jsonrpc.Request{ID: rid, Method: name, Params: rawCopy(params)}, nil
	}
	if !rid.IsValid() {
		return nil, errors.New("a message from the server has neither a method nor an id")
	}
	resp := &jsonrpc.Response{ID: rid, Result: rawCopy(result)}
	if rerr != nil && !bytes.Equal(rerr, []byte("null")) {
		var we jsonrpc.Error
		if err := json.Unmarshal(rerr, &we); err != nil {
			return nil, fmt.Errorf("a message from the server has an error that is not a JSON-RPC error: %w", err)
		}
		resp.Error = &we
	}
	return resp, nil
}

// decodeID decodes a message's id as jsonrpc.MakeID takes it from a
// decoded message: absent or null is no id, a number is made an integer
// (through a float64, as the SDK decodes it), a string is itself.
func decodeID(raw []byte) (jsonrpc.ID, error) {
	if raw == nil || bytes.Equal(raw, []byte("null")) {
		return jsonrpc.ID{}, nil
	}
	switch raw[0] {
	case '"':
		s, err := jsonString(raw)
		if err != nil {
			return jsonrpc.ID{}, err
		}
		return jsonrpc.MakeID(s)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			// Out of float64's range: the SDK's decoder refuses it too.
			return jsonrpc.ID{}, fmt.Errorf("a message from the server has id %s, out of range", raw)
		}
		return jsonrpc.MakeID(f)
	}
	return jsonrpc.ID{}, fmt.Errorf("a message from the server has id %s, neither a string nor a number", excerpt(raw))
}

// jsonString decodes a JSON string, without encoding/json when it holds no
// escape.
func jsonString(raw []byte) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// rawCopy copies a member's value out of the line buffer; absent stays nil.
func rawCopy(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(bytes.Clone(b))
}

func orMissing(b []byte) string {
	if b == nil {
		return "missing"
	}
	return excerpt(b)
}

// excerpt is the start of a line, for an error message.
func excerpt(b []byte) string {
	const n = 80
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK decodes a tool's schemas into map[string]any and its annotations
// into a struct, which loses key order, the exact form of numbers and any
// field it does not model. lathe promises definitions as the server sent
// them, so it watches the wire for the results of tools/list and keeps each
// tool's schemas and annotations as raw bytes: on a stdio connection by
// wrapping the connection, over HTTP by reading the response bodies of
// tools/list requests as they pass.

// rawTool is the part of a tool kept as sent.
type rawTool struct {
	Name         string          `json:"name"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
	// Execution says whether the tool runs as a task (tasks.go).
	Execution json.RawMessage `json:"execution"`
}

// capture collects the raw tools of one session.
type capture struct {
	mu       sync.Mutex
	pending  map[any]bool // ids of tools/list requests awaiting their response
	tools    map[string]*rawTool
	rejected []rejection // tools screened out of answers, not yet reported
	// order lets a call wait for the notifications read before its answer
	// (logging.go).
	order order
	// nonce is the secret of the server's marks of the call a message is
	// for (related.go).
	nonce string
}

func newCapture() *capture {
	return &capture{pending: map[any]bool{}, tools: map[string]*rawTool{}}
}

const methodListTools = "tools/list"

// sent notes an outgoing message.
func (c *capture) sent(m jsonrpc.Message) {
	if r, ok := m.(*jsonrpc.Request); ok && r.Method == methodListTools && r.ID.IsValid() {
		c.mu.Lock()
		c.pending[idKey(r.ID)] = true
		c.mu.Unlock()
	}
}

// received notes an incoming message.
func (c *capture) received(m jsonrpc.Message) {
	r, ok := m.(*jsonrpc.Response)
	if !ok || !r.ID.IsValid() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		// No tools/list awaits its answer: the common case of a call.
		return
	}
	k := idKey(r.ID)
	if !c.pending[k] {
		return
	}
	delete(c.pending, k)
	var res struct {
		Tools []*rawTool `json:"tools"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil {
		return
	}
	for _, t := range res.Tools {
		if t != nil {
			c.tools[t.Name] = t
		}
	}
}

// listing reports whether a tools/list request awaits its answer.
func (c *capture) listing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) > 0
}

// isPending reports whether raw, the id of a response as written, is that
// of a tools/list request awaiting its answer.
func (c *capture) isPending(raw []byte) bool {
	if raw == nil {
		return false
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var id any
	if d.Decode(&id) != nil {
		return false
	}
	b, err := json.Marshal(id)
	if err != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending[string(b)]
}

// reject records tools screened out of an answer.
func (c *capture) reject(r []rejection) {
	c.mu.Lock()
	c.rejected = append(c.rejected, r...)
	c.mu.Unlock()
}

// takeRejected returns the tools screened out since it was last called.
func (c *capture) takeRejected() []rejection {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.rejected
	c.rejected = nil
	return r
}

// tool returns the raw form of the named tool, or nil.
func (c *capture) tool(name string) *rawTool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tools[name]
}

// idKey makes an id comparable across its encodings: a number read back
// from JSON may not have the Go type it was sent with.
func idKey(id jsonrpc.ID) any {
	b, _ := json.Marshal(id.Raw())
	return string(b)
}

// captureTransport wraps a stdio transport's connection.
type captureTransport struct {
	inner sdk.Transport
	cap   *capture
}

func (t *captureTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &captureConn{Connection: c, cap: t.cap}, nil
}

type captureConn struct {
	sdk.Connection
	cap *capture
}

func (c *captureConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if err == nil {
		c.cap.received(m)
		c.cap.order.noteRead(m)
	}
	return m, err
}

func (c *captureConn) Write(ctx context.Context, m jsonrpc.Message) error {
	c.cap.sent(m)
	return c.Connection.Write(ctx, m)
}

// headerTransport adds the configured headers to every request to an HTTP
// server, and reads the responses to tools/list for the capture.
type headerTransport struct {
	headers map[string]string
	cap     *capture
	base    http.RoundTripper
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	listing := false
	if req.Method == http.MethodPost && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			b, _ := io.ReadAll(io.LimitReader(body, 1<<20))
			body.Close()
			if m, err := jsonrpc.DecodeMessage(b); err == nil {
				t.cap.sent(m)
				r, ok := m.(*jsonrpc.Request)
				listing = ok && r.Method == methodListTools
			}
		}
	}
	// Tasks: a task-augmented call and its answer (tasks.go).
	req, asTask := lowerTaskRequest(req)
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if id, ok := req.Context().Value(inflightKey{}).(uint64); ok && err == nil && resp.Body != nil && t.cap.nonce != "" &&
		strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// The stream of one of lathe's calls: what the server asks on
		// it is about that call (related.go).
		resp.Body = &relatedBody{ReadCloser: resp.Body, mark: t.cap.nonce + ":" + strconv.FormatUint(id, 10)}
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	}
	if err == nil && asTask && resp.Body != nil {
		stream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
		resp.Body = &taskBody{ReadCloser: resp.Body, stream: stream}
		if stream {
			// A call waits for the log messages of its stream (logging.go).
			resp.Body = &countBody{ReadCloser: resp.Body, order: &t.cap.order}
		}
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
		return resp, nil
	}
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if !listing {
		// A call waits for the log messages of its stream (logging.go).
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			resp.Body = &countBody{ReadCloser: resp.Body, order: &t.cap.order}
		}
		return resp, nil
	}
	resp.Body = &sniffBody{ReadCloser: resp.Body, cap: t.cap,
		stream: strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")}
	// Screening may shorten the body.
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	return resp, nil
}

// sniffBody passes on the body of a response to tools/list, screened (see
// [capture.screen]) and noted by the capture: the whole body for
// application/json, each data line for an event stream. A JSON body larger
// than maxSniff passes as it is.
type sniffBody struct {
	io.ReadCloser
	cap    *capture
	stream bool
	src    *bufio.Reader
	out    []byte
	err    error
	rest   bool // the body was too large to screen; the rest passes as it is
}

const maxSniff = 16 << 20

func (b *sniffBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		if b.src == nil {
			b.src = bufio.NewReaderSize(b.ReadCloser, 64<<10)
		}
		switch {
		case b.rest:
			// Unscreened, the rest goes straight into p.
			return b.src.Read(p)
		case b.stream:
			b.out, b.err = b.line()
		default:
			b.out, b.err = b.whole()
		}
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

// whole reads the JSON body, screened, and ends with io.EOF after it.
func (b *sniffBody) whole() ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(b.src, maxSniff+1))
	if err != nil {
		return body, err
	}
	if len(body) > maxSniff {
		b.rest = true
		return body, nil
	}
	body = b.cap.screen(bytes.TrimSpace(body))
	b.decode(body)
	return body, io.EOF
}

// line reads one line of an event stream, its data screened.
func (b *sniffBody) line() ([]byte, error) {
	line, err := b.src.ReadBytes('\n')
	if data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:")); ok && len(line) <= maxSniff {
		data = b.cap.screen(bytes.TrimSpace(data))
		b.decode(data)
		end := line[len(bytes.TrimRight(line, "\r\n")):]
		line = append(append([]byte("data: "), data...), end...)
	}
	return line, err
}

func (b *sniffBody) decode(data []byte) {
	if m, err := jsonrpc.DecodeMessage(data); err == nil {
		b.cap.received(m)
		b.cap.order.noteRead(m) // logging.go
	}
}

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/lathe-tools/lathe/internal/jsonscan"
)

// The direct path: a plain tools/call to a server over stdio, written by
// lathe and its answer taken off the connection before the SDK's session
// sees it. It exists for speed on the gateway's path. The SDK's client
// runs each call through its middleware, encodes the request, waits for
// the answer through its own connection's bookkeeping and decodes the
// answer again with a fresh decoder; the direct path writes the request
// once and hands the answer, decoded once by [stdioConn], to the call.
//
// Everything else of the session stays the SDK's: the server's requests
// (elicitation, sampling, roots) and notifications (progress, log
// messages) are read by the SDK's session as before, and reach lathe's
// handlers, which find the call they belong to as they did (server.caller).
// The direct path is taken only where the SDK would add nothing to the
// call: a session of MCP before 2026-07-28 (whose calls carry no
// per-request capabilities, log level or task extension) and a tool its
// server does not offer to run as a task (tasks.go).

// directBase is the first id of the direct path's requests. The SDK
// numbers its requests from 1, so the two never meet; ids stay below 2^53,
// which every JSON implementation reads exactly.
const directBase int64 = 1 << 40

// cancelNotifyTimeout bounds the writing of a notifications/cancelled to a
// server that does not read its input.
const cancelNotifyTimeout = 5 * time.Second

// directTransport wraps a stdio session's transport: its connection lets
// lathe send calls of its own (see above).
type directTransport struct {
	inner sdk.Transport
	made  func(*directConn) // told the connection, once it is made
}

func (t *directTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	d := &directConn{Connection: c, waiting: map[int64]chan *jsonrpc.Response{}}
	t.made(d)
	return d, nil
}

// directConn is a connection through which lathe sends calls of its own
// beside the SDK's, and takes their answers out of what the SDK reads.
type directConn struct {
	sdk.Connection

	mu      sync.Mutex
	next    int64
	waiting map[int64]chan *jsonrpc.Response // calls awaiting their answer, by id
	// err is why reading ended; set once, when the calls waiting are
	// sent nil for their answer.
	err error
}

// Read passes on what the server sends, but for the answers to the direct
// path's calls, which go to their callers. An answer whose call has gone
// (cancelled, or an id the server made up) is dropped, as the SDK drops an
// answer to no call of its own.
func (c *directConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		m, err := c.Connection.Read(ctx)
		if err != nil {
			c.fail(err)
			return nil, err
		}
		r, ok := m.(*jsonrpc.Response)
		if !ok {
			return m, nil
		}
		id, ok := r.ID.Raw().(int64)
		if !ok || id < directBase {
			return m, nil
		}
		c.mu.Lock()
		ch := c.waiting[id]
		delete(c.waiting, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- r // buffered: the caller may have stopped waiting
		}
	}
}

// fail ends the direct path's calls: the server's output is over.
func (c *directConn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	// The calls waiting learn it from their answer's channel, which they
	// wait on anyway: one channel fewer in each call's wait.
	for id, ch := range c.waiting {
		ch <- nil // buffered, and sent nothing else: it is still waiting
		delete(c.waiting, id)
	}
}

func (c *directConn) Close() error {
	c.fail(errors.New("the session is closed"))
	return c.Connection.Close()
}

// call sends a tools/call and returns the server's answer: a result, or a
// JSON-RPC error as a *jsonrpc.Error. When ctx ends first, the server is
// told the call is cancelled, as the SDK tells it, and ctx's error is
// returned; a connection that ends first gives an error saying so.
func (c *directConn) call(ctx context.Context, params *sdk.CallToolParams) (*sdk.CallToolResult, error) {
	raw, err := encodeParams(params)
	if err != nil {
		return nil, err
	}
	ch := make(chan *jsonrpc.Response, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: %v", sdk.ErrConnectionClosed, c.err)
	}
	c.next++
	id := directBase + c.next
	c.waiting[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.waiting, id)
		c.mu.Unlock()
	}
	rid, err := jsonrpc.MakeID(float64(id)) // a number id is made from a float64
	if err != nil {
		forget()
		return nil, err
	}
	if err := c.Connection.Write(ctx, &jsonrpc.Request{ID: rid, Method: "tools/call", Params: raw}); err != nil {
		forget()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: writing the call: %v", sdk.ErrConnectionClosed, err)
	}
	ended, aborted := ends(ctx)
	select {
	case r := <-ch:
		if r == nil {
			// fail: the server's output is over.
			c.mu.Lock()
			err := c.err
			c.mu.Unlock()
			return nil, fmt.Errorf("%w: %v", sdk.ErrConnectionClosed, err)
		}
		if r.Error != nil {
			return nil, r.Error
		}
		return decodeResult(r.Result)
	case <-ended:
	case <-aborted:
	}
	forget()
	// Off the caller's path: a server that does not read its input must
	// not hold the call past its own end.
	go c.cancelled(id, ctx.Err())
	return nil, ctx.Err()
}

// cancelled tells the server that the call id is cancelled.
func (c *directConn) cancelled(id int64, why error) {
	ctx, cancel := context.WithTimeout(context.Background(), cancelNotifyTimeout)
	defer cancel()
	p, err := json.Marshal(&sdk.CancelledParams{RequestID: id, Reason: why.Error()})
	if err != nil {
		return
	}
	_ = c.Connection.Write(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: p})
}

// decodeResult decodes a tools/call result. The most common one, text
// blocks and perhaps isError, is read with the scanner stdioConn reads
// envelopes with; anything else goes to the SDK's decoding, which gives
// the same result for the common one (keys matched exactly, as the SDK
// matches them) at several times the cost, a fresh decoder with a 32 KiB
// buffer among it.
func decodeResult(raw json.RawMessage) (*sdk.CallToolResult, error) {
	if r, ok := textResult(raw); ok {
		return r, nil
	}
	var res sdk.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("the server's answer to tools/call is not a result: %w", err)
	}
	return &res, nil
}

// textResult reads a result whose members are "content", a list of
// blocks each of exactly "type": "text" and "text", and perhaps "isError"
// as true or false; ok is false for any other result.
func textResult(raw []byte) (res *sdk.CallToolResult, ok bool) {
	var content []byte
	isError, plain := false, true
	if jsonscan.Members(raw, 0, func(key string, vs, ve int) {
		switch v := raw[vs:ve]; key {
		case "content":
			content = v
		case "isError":
			switch string(v) {
			case "true":
				isError = true
			case "false":
				isError = false
			default:
				plain = false
			}
		default:
			plain = false
		}
	}) != nil || !plain || len(content) == 0 || content[0] != '[' {
		return nil, false
	}
	blocks := []sdk.Content{}
	if jsonscan.Elements(content, func(vs, ve, _ int) {
		if !plain {
			return
		}
		var typ, text []byte
		if jsonscan.Members(content[vs:ve], 0, func(key string, ks, ke int) {
			switch v := content[vs+ks : vs+ke]; key {
			case "type":
				typ = v
			case "text":
				text = v
			default:
				plain = false
			}
		}) != nil || string(typ) != `"text"` || len(text) == 0 || text[0] != '"' {
			plain = false
			return
		}
		t, err := jsonString(text)
		if err != nil || !utf8.ValidString(t) {
			// The SDK's decoder mends bad UTF-8; the scanner does not.
			plain = false
			return
		}
		blocks = append(blocks, &sdk.TextContent{Text: t})
	}) != nil || !plain {
		return nil, false
	}
	return &sdk.CallToolResult{Content: blocks, IsError: isError}, true
}

// encodeParams writes a call's params as json.Marshal writes them, without
// its reflection over the struct and its compaction of the arguments:
// they are the call's own JSON, checked by the engine, and are only
// compacted when they hold a line break, which would end the message on
// the server's input early.
func encodeParams(p *sdk.CallToolParams) (json.RawMessage, error) {
	args, ok := p.Arguments.(json.RawMessage)
	if !ok || !json.Valid(args) || len(p.InputResponses) > 0 || p.RequestState != "" {
		return json.Marshal(p)
	}
	b := make([]byte, 0, len(args)+len(p.Name)+64)
	b = append(b, '{')
	if len(p.Meta) > 0 {
		meta, err := json.Marshal(p.Meta)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `"_meta":`...), meta...)
		b = append(b, ',')
	}
	name, err := json.Marshal(p.Name)
	if err != nil {
		return nil, err
	}
	b = append(append(b, `"name":`...), name...)
	b = append(b, `,"arguments":`...)
	if bytes.ContainsAny(args, "\r\n") {
		var c bytes.Buffer
		if err := json.Compact(&c, args); err != nil {
			return nil, err
		}
		args = c.Bytes()
	}
	return append(append(b, args...), '}'), nil
}

package mcp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/lathe-tools/lathe/internal/mcpconv"
)

// Which call a server's request is for, over streamable HTTP. MCP before
// 2026-07-28 does not name, in an elicitation, a sampling request or a log
// message, the call it is about; but over streamable HTTP a server sends
// what relates to a client's request on the event stream that answers that
// request (go-sdk does, and the TypeScript SDK for a handler's own
// requests). So lathe marks each such message read from the stream of one
// of its calls with that call, in its _meta under relatedKey, before the
// SDK decodes it, and the handlers take the mark as the call's name (see
// server.named). The mark holds a secret of the server's (nonce) that
// never leaves lathe: a server that writes such a mark itself, on another
// stream or its standalone one, cannot name a call with it. What comes on
// the standalone stream is unmarked, and attributed as before (see
// server.caller).

// relatedKey is the _meta key of the mark.
const relatedKey = "lathe/call"

// relatedMethods are the messages that are marked.
var relatedMethods = [][]byte{
	[]byte(`"elicitation/create"`), []byte(`"sampling/createMessage"`), []byte(`"notifications/message"`),
}

// newNonce makes the secret of a server's marks.
func newNonce() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Which call a server's request is for, by its task (MCP 2025-11-25). A
// server asks what a task needs while lathe waits in tasks/result for it,
// and names the task in the request's _meta (mcpconv.RelatedTaskKey), as
// the protocol asks. The task's ID is the server's answer to one of
// lathe's calls, so it names that call, over stdio too. A server may send
// the request before lathe has read the task's handle: the ID is then kept
// in ctx (relatedTask) for attribute, which places the request once the
// call has its task.

// relatedTask carries, in a request's ctx, the task the request names.
type relatedTask struct{}

// taskOf returns the ID of the task meta names, if any.
func taskOf(meta map[string]any) string {
	rt, _ := meta[mcpconv.RelatedTaskKey].(map[string]any)
	id, _ := rt["taskId"].(string)
	return id
}

// byTaskLocked finds the one call in flight whose task is id; 0 when none
// or several are (a server that gave two calls one ID names neither).
// s.mu is held.
func (s *server) byTaskLocked(id string, among func(uint64) bool) uint64 {
	var found uint64
	for cid, f := range s.inflight {
		if f.task != id || !among(cid) {
			continue
		}
		if found != 0 {
			return 0
		}
		found = cid
	}
	return found
}

// named returns ctx naming the call that meta's mark names, if the mark is
// the server's own, or the call whose task meta names; else ctx as it is,
// with the task it names, if any, for attribute.
func (s *server) named(ctx context.Context, meta map[string]any) context.Context {
	if task := taskOf(meta); task != "" {
		s.mu.Lock()
		id := s.byTaskLocked(task, func(uint64) bool { return true })
		s.mu.Unlock()
		if id != 0 {
			return context.WithValue(ctx, inflightKey{}, id)
		}
		ctx = context.WithValue(ctx, relatedTask{}, task)
	}
	v, _ := meta[relatedKey].(string)
	nonce, id, ok := strings.Cut(v, ":")
	if !ok || s.nonce == "" || subtle.ConstantTimeCompare([]byte(nonce), []byte(s.nonce)) != 1 {
		return ctx
	}
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return ctx
	}
	return context.WithValue(ctx, inflightKey{}, n)
}

// relatedBuffer is the buffer of a relatedBody: every call's stream has
// one.
const relatedBuffer = 4 << 10

// relatedBody passes on the event stream that answers the call id, each
// message of relatedMethods marked with the call (see above). A line whose
// head names no such method passes as it is, however long, without being
// held; a marked message is at most maxSniff long (a longer one passes
// unmarked).
type relatedBody struct {
	io.ReadCloser
	mark string // nonce:id
	src  *bufio.Reader
	out  []byte
	err  error
	pass bool // the rest of the current line passes as it is
}

func (b *relatedBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		if b.src == nil {
			// Small: a long line passes through it in pieces, and only
			// a line's head decides.
			b.src = bufio.NewReaderSize(b.ReadCloser, relatedBuffer)
		}
		chunk, err := b.src.ReadSlice('\n')
		full := errors.Is(err, bufio.ErrBufferFull)
		if full {
			err = nil
		}
		switch {
		case b.pass:
		case !full && err == nil || err == io.EOF:
			// A whole line (or the last one).
			chunk = b.markLine(chunk)
		case b.wanted(chunk):
			// The head of a long line that names a method to mark: the
			// whole line, up to maxSniff.
			line := append([]byte(nil), chunk...)
			for full && len(line) <= maxSniff {
				chunk, err = b.src.ReadSlice('\n')
				full = errors.Is(err, bufio.ErrBufferFull)
				if full {
					err = nil
				}
				line = append(line, chunk...)
			}
			if len(line) <= maxSniff {
				line = b.markLine(line)
			}
			chunk = line
		}
		// The rest of a line that is not whole passes as it is.
		b.pass = full
		// chunk stays valid until the next ReadSlice, which waits for
		// b.out to be drained.
		b.out, b.err = chunk, err
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

// wanted reports whether a line's head is a data line that names a method
// to mark.
func (b *relatedBody) wanted(head []byte) bool {
	if !bytes.HasPrefix(head, dataPrefix) {
		return false
	}
	head = head[:min(len(head), headLen)]
	for _, m := range relatedMethods {
		if bytes.Contains(head, m) {
			return true
		}
	}
	return false
}

// markLine marks the message of one data line, if it is one to mark.
func (b *relatedBody) markLine(line []byte) []byte {
	if !b.wanted(line) {
		return line
	}
	body := bytes.TrimRight(line, "\r\n")
	end := line[len(body):]
	data := bytes.TrimSpace(bytes.TrimPrefix(body, dataPrefix))
	m, err := jsonrpc.DecodeMessage(data)
	r, ok := m.(*jsonrpc.Request)
	if err != nil || !ok {
		return line
	}
	var params map[string]json.RawMessage
	if len(r.Params) > 0 && json.Unmarshal(r.Params, &params) != nil {
		return line
	}
	if params == nil {
		params = map[string]json.RawMessage{}
	}
	var meta map[string]any
	if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return line
	}
	if meta == nil {
		meta = map[string]any{}
	}
	meta[relatedKey] = b.mark
	var err2 error
	if params["_meta"], err2 = json.Marshal(meta); err2 != nil {
		return line
	}
	if r.Params, err2 = json.Marshal(params); err2 != nil {
		return line
	}
	out, err := jsonrpc.EncodeMessage(r)
	if err != nil {
		return line
	}
	return append(append([]byte("data: "), out...), end...)
}

package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// JSON-RPC's error codes for input that is no message.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// stdioTransport returns the MCP transport of [Server.ServeStdio]: the MCP
// SDK's newline-delimited JSON over in and out, with every line checked
// first. The SDK ends the session at the first line it cannot decode; a
// server on standard input answers such a line with a JSON-RPC error, as
// the JSON-RPC specification asks (-32700 for text that is not JSON,
// -32600 for JSON that is no message), and goes on reading.
// It returns too the writer the transport writes to, on which other lines
// may be written whole.
func stdioTransport(in io.Reader, out io.Writer) (sdk.Transport, io.Writer) {
	w := &lockedWriter{w: out}
	return &sdk.IOTransport{
		Reader: io.NopCloser(&lineFilter{r: bufio.NewReaderSize(in, 64<<10), w: w, max: sdk.DefaultMaxLineLength}),
		Writer: nopWriteCloser{w},
	}, w
}

// lockedWriter makes each Write whole: the SDK writes one message per Write,
// and the filter's error answers go between them, never inside one.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// lineFilter reads lines from r and passes on those that hold a JSON-RPC
// message or a batch of them; it answers every other line on w itself. A
// line longer than max is answered and skipped without being kept whole.
type lineFilter struct {
	r   *bufio.Reader
	w   io.Writer
	max int
	buf []byte // what is left of the current line to pass on
	err error  // the reader's error, once the lines are over
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.buf) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		line, tooLong, err := f.readLine()
		if err != nil {
			f.err = err
		}
		if tooLong {
			f.answer(nil, codeParseError, fmt.Sprintf("Parse error: a message is at most %d bytes", f.max))
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if f.check(line) {
			f.buf = line
		}
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

// readLine returns the next line with its newline (the last line may have
// none), or reports that it was longer than f.max and has been skipped.
func (f *lineFilter) readLine() (line []byte, tooLong bool, err error) {
	for {
		chunk, err := f.r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > f.max {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, tooLong, err
	}
}

// check reports whether line holds a message, or a non-empty batch of them,
// the SDK can decode; it answers any other line.
func (f *lineFilter) check(line []byte) bool {
	if !json.Valid(line) {
		var v any
		err := json.Unmarshal(line, &v)
		f.answer(nil, codeParseError, "Parse error: "+err.Error())
		return false
	}
	trimmed := bytes.TrimSpace(line)
	if trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil || len(batch) == 0 {
			f.answer(nil, codeInvalidRequest, "Invalid Request: a batch must be a non-empty array of messages")
			return false
		}
		for _, m := range batch {
			if _, err := jsonrpc.DecodeMessage(m); err != nil {
				f.answer(nil, codeInvalidRequest, "Invalid Request: "+err.Error())
				return false
			}
		}
		return true
	}
	if _, err := jsonrpc.DecodeMessage(trimmed); err != nil {
		f.answer(requestID(trimmed), codeInvalidRequest, "Invalid Request: "+err.Error())
		return false
	}
	return true
}

// requestID returns the id of a message that could not be decoded, when it
// has one a response may carry (a string or a number), or nil.
func requestID(msg []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(msg, &m) != nil || len(m.ID) == 0 {
		return nil
	}
	if m.ID[0] == '"' || m.ID[0] == '-' || '0' <= m.ID[0] && m.ID[0] <= '9' {
		return m.ID
	}
	return nil
}

// answer writes a JSON-RPC error response for id (null when nil).
func (f *lineFilter) answer(id json.RawMessage, code int, message string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, message}})
	if err != nil {
		return
	}
	// A client that stopped reading cannot be told; the session ends when
	// the SDK's own writes fail.
	_, _ = f.w.Write(append(b, '\n'))
}

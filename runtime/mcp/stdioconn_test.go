package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// pipeConn is a stdioConn over in-memory pipes: what the test writes to
// server comes out of the connection's Read; what the connection writes
// comes out of fromConn.
func pipeConn(t *testing.T, wrap func(io.Reader) io.Reader) (c *stdioConn, server *io.PipeWriter, fromConn *bufio.Reader) {
	t.Helper()
	outR, outW := io.Pipe()
	inR, inW := io.Pipe()
	var r io.Reader = outR
	if wrap != nil {
		r = wrap(outR)
	}
	c = newStdioConn(inW, readCloser{r, outR}, nil)
	t.Cleanup(func() {
		c.Close()
		outW.Close()
		inR.Close()
	})
	return c, outW, bufio.NewReader(inR)
}

type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }

// readTimeout reads one message, failing the test if none comes in time.
func readTimeout(t *testing.T, c *stdioConn) (jsonrpc.Message, error) {
	t.Helper()
	type res struct {
		m   jsonrpc.Message
		err error
	}
	ch := make(chan res, 1)
	go func() {
		m, err := c.Read(context.Background())
		ch <- res{m, err}
	}()
	select {
	case r := <-ch:
		return r.m, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("stdioConn.Read hung for 10s")
		return nil, nil
	}
}

// The connection makes of each line what the SDK's own decoder makes of
// it: the same Request or Response, or an error where it fails.
func TestStdioConnDecodesAsTheSDK(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","id":"abc","result":{}}`,
		`{"jsonrpc":"2.0","id":"a\"b\u00e9","result":null}`,
		`{"jsonrpc":"2.0","id":7.9,"result":1}`,
		`{"jsonrpc":"2.0","id":-3,"error":{"code":-32601,"message":"no such method","data":{"x":[1,2]}}}`,
		`{"jsonrpc":"2.0","id":4,"error":null,"result":{"a":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}`,
		`{"jsonrpc":"2.0","id":9,"method":"elicitation/create","params":{"message":"ok?"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"x","params":null}`,
		`{"jsonrpc":"2.0","method":""}`,
		`{"jsonrpc":"2.0","method":null}`,
		`  {"method":"m","jsonrpc":"2.0","extra":{"deep":[[[]]]},"id":"1"}  `,
		`{"jsonrpc":"2.\u0030","id":1,"result":2}`,
		`{"jsonrpc":"2.0","id":1,"result":{"a":1},"result":{"b":2}}`,
		// Refused by both.
		`{"jsonrpc":"1.0","id":1,"result":{}}`,
		`{"id":1,"result":{}}`,
		`{"jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"2.0","id":true,"result":{}}`,
		`{"jsonrpc":"2.0","id":{},"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":3}`,
		`{"jsonrpc":"2.0","id":1,"error":"bad"}`,
		`{"jsonrpc":"2.0","id":1,"result":{]}`,
		`{"jsonrpc":"2.0","id":1,"result":tru}`,
		`"just a string"`,
		`42`,
	}
	for _, line := range lines {
		want, wantErr := jsonrpc.DecodeMessage([]byte(line))
		got, gotErr := decodeMessage([]byte(line))
		if (wantErr != nil) != (gotErr != nil) {
			t.Errorf("%s:\n the SDK: %v, %v\n lathe:   %v, %v", line, want, wantErr, got, gotErr)
			continue
		}
		if wantErr != nil {
			continue
		}
		if !reflect.DeepEqual(normal(want), normal(got)) {
			t.Errorf("%s:\n the SDK: %#v\n lathe:   %#v", line, normal(want), normal(got))
		}
	}
}

// normal makes a message comparable: raw JSON compacted, the error's
// concrete type dropped.
func normal(m jsonrpc.Message) any {
	compact := func(b json.RawMessage) string {
		if b == nil {
			return "<nil>"
		}
		var s bytes.Buffer
		if err := json.Compact(&s, b); err != nil {
			return "invalid:" + string(b)
		}
		return s.String()
	}
	switch m := m.(type) {
	case *jsonrpc.Request:
		return fmt.Sprintf("request id=%v method=%q params=%s", m.ID.Raw(), m.Method, compact(m.Params))
	case *jsonrpc.Response:
		e := "<nil>"
		if we, ok := m.Error.(*jsonrpc.Error); ok && we != nil {
			e = fmt.Sprintf("%d %q %s", we.Code, we.Message, compact(we.Data))
		}
		return fmt.Sprintf("response id=%v result=%s error=%s", m.ID.Raw(), compact(m.Result), e)
	}
	return fmt.Sprintf("%T", m)
}

// A message that reaches the connection a byte at a time, across many
// reads, is read whole, and so is one many times the read buffer.
func TestStdioConnSplitAndHugeMessages(t *testing.T) {
	c, server, _ := pipeConn(t, iotest.OneByteReader)
	huge := strings.Repeat("x", 3*readBuffer+17)
	go func() {
		fmt.Fprintf(server, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"n\":1}}\n")
		fmt.Fprintf(server, "\n  \r\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"text\":%q}}\r\n", huge)
		fmt.Fprintf(server, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"after\"}}\n")
	}()
	m, err := readTimeout(t, c)
	if r, ok := m.(*jsonrpc.Response); err != nil || !ok || string(r.Result) != `{"n":1}` {
		t.Fatalf("first message: %v, %v", normal(m), err)
	}
	m, err = readTimeout(t, c)
	r, ok := m.(*jsonrpc.Response)
	if err != nil || !ok {
		t.Fatalf("huge message: %v, %v", m, err)
	}
	var res struct{ Text string }
	if err := json.Unmarshal(r.Result, &res); err != nil || res.Text != huge {
		t.Fatalf("huge message came back with %d bytes of text (want %d): %v", len(res.Text), len(huge), err)
	}
	m, err = readTimeout(t, c)
	if q, ok := m.(*jsonrpc.Request); err != nil || !ok || q.Method != "notifications/message" {
		t.Fatalf("message after the huge one: %v, %v", normal(m), err)
	}
}

// The result of one message is not overwritten by the next: the line
// buffer is reused, what the connection hands on must not be.
func TestStdioConnKeepsEachMessage(t *testing.T) {
	c, server, _ := pipeConn(t, nil)
	go func() {
		for i := range 50 {
			fmt.Fprintf(server, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"i\":%d}}\n", i, i)
		}
	}()
	var got []*jsonrpc.Response
	for range 50 {
		m, err := readTimeout(t, c)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.(*jsonrpc.Response))
	}
	for i, r := range got {
		if want := fmt.Sprintf(`{"i":%d}`, i); string(r.Result) != want {
			t.Fatalf("message %d holds %s, want %s", i, r.Result, want)
		}
	}
}

// A line longer than maxLine ends the session with an error naming the
// limit, as soon as it is past the limit: the connection does not wait for
// the rest of it (the writer here never finishes the line).
func TestStdioConnRefusesTooLongLine(t *testing.T) {
	c, server, _ := pipeConn(t, nil)
	go func() {
		server.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"t":"`))
		chunk := []byte(strings.Repeat("y", 1<<20))
		for range maxLine/len(chunk) + 2 {
			if _, err := server.Write(chunk); err != nil {
				return
			}
		}
		// The line never ends: a connection that waited for its newline
		// would hang here.
	}()
	_, err := readTimeout(t, c)
	if !errors.Is(err, errTooLarge) || !strings.Contains(err.Error(), fmt.Sprint(maxLine)) {
		t.Fatalf("a line longer than %d bytes: got %v, want an error naming the limit", maxLine, err)
	}
	if _, err2 := readTimeout(t, c); !errors.Is(err2, errTooLarge) {
		t.Fatalf("the read after the error: %v, want the same error", err2)
	}
}

// A line that is not a message ends the session with an error quoting it;
// reads after it keep failing, as the session is over.
func TestStdioConnMalformedLine(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"a":}}`,
		`not json at all`,
		`{"jsonrpc":"2.0","id":1,"result":{}} {"jsonrpc":"2.0","id":2,"result":{}}`,
		`[{"jsonrpc":"2.0","id":1,"result":{}}]`,
	} {
		c, server, _ := pipeConn(t, nil)
		go fmt.Fprintln(server, line)
		_, err := readTimeout(t, c)
		if err == nil {
			t.Errorf("%s: read without an error", line)
			continue
		}
		if strings.HasPrefix(line, "[") {
			if !strings.Contains(err.Error(), "batch") {
				t.Errorf("%s: %v, want an error about the batch", line, err)
			}
		} else if !strings.Contains(err.Error(), strconv.Quote(line)[:10]) {
			t.Errorf("%s: %v, want an error quoting the line", line, err)
		}
		if _, err2 := readTimeout(t, c); err2 == nil {
			t.Errorf("%s: the read after the error succeeded", line)
		}
	}
}

// The server's output ending inside a message is io.ErrUnexpectedEOF; a
// whole last message without its newline is read, then io.EOF.
func TestStdioConnEOF(t *testing.T) {
	c, server, _ := pipeConn(t, nil)
	go func() {
		fmt.Fprint(server, `{"jsonrpc":"2.0","id":1,"res`)
		server.Close()
	}()
	if _, err := readTimeout(t, c); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("output ended inside a message: %v, want io.ErrUnexpectedEOF", err)
	}

	c, server, _ = pipeConn(t, nil)
	go func() {
		fmt.Fprint(server, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		server.Close()
	}()
	if m, err := readTimeout(t, c); err != nil || m.(*jsonrpc.Response).ID.Raw() != int64(1) {
		t.Fatalf("last message without a newline: %v, %v", m, err)
	}
	if _, err := readTimeout(t, c); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last message: %v, want io.EOF", err)
	}
}

// Close ends a Read waiting for the server, with io.EOF.
func TestStdioConnCloseEndsRead(t *testing.T) {
	c, _, _ := pipeConn(t, nil)
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(context.Background())
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	c.Close()
	select {
	case err := <-done:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("Read after Close: %v, want io.EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read still waiting 10s after Close")
	}
}

// Messages written at once from many goroutines reach the server whole,
// one per line, none lost or interleaved.
func TestStdioConnConcurrentWrites(t *testing.T) {
	c, _, fromConn := pipeConn(t, nil)
	const writers, each = 16, 100
	pad := strings.Repeat("p", 5000) // more than a pipe writes at once in some systems' chunks
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id, err := jsonrpc.MakeID(float64(w*each + i))
				if err != nil {
					errs <- err
					return
				}
				req := &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(`{"pad":"` + pad + `"}`)}
				if err := c.Write(context.Background(), req); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	seen := make(map[int64]bool)
	read := make(chan error, 1)
	go func() {
		for range writers * each {
			line, err := fromConn.ReadBytes('\n')
			if err != nil {
				read <- err
				return
			}
			m, err := jsonrpc.DecodeMessage(line)
			if err != nil {
				read <- fmt.Errorf("line %q: %v", excerpt(line), err)
				return
			}
			seen[m.(*jsonrpc.Request).ID.Raw().(int64)] = true
		}
		read <- nil
	}()
	select {
	case err := <-read:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the concurrent writes did not all arrive within 30s")
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != writers*each {
		t.Fatalf("%d distinct messages arrived, want %d", len(seen), writers*each)
	}
}

// A message larger than keepBuffer is read whole, and its buffer is not
// kept once the next message is read: one huge answer must not pin its
// size for the session's life.
func TestStdioConnDropsHugeBuffer(t *testing.T) {
	c, server, _ := pipeConn(t, nil)
	huge := strings.Repeat("z", 2*keepBuffer)
	go func() {
		fmt.Fprintf(server, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"text\":%q}}\n", huge)
		fmt.Fprintf(server, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n")
	}()
	if m, err := readTimeout(t, c); err != nil || len(m.(*jsonrpc.Response).Result) < len(huge) {
		t.Fatalf("huge message: %v", err)
	}
	if _, err := readTimeout(t, c); err != nil {
		t.Fatal(err)
	}
	if n := cap(c.line); n > keepBuffer {
		t.Fatalf("after a short message the connection still holds a buffer of %d bytes (at most %d)", n, keepBuffer)
	}
}

package mcp

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// gateWriter is a server's standard input whose first write waits until
// the test opens the gate, counting the writes it gets; fail makes every
// write after the first fail.
type gateWriter struct {
	gate chan struct{}
	fail bool

	mu     sync.Mutex
	writes [][]byte
}

func (w *gateWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	first := len(w.writes) == 0
	w.writes = append(w.writes, bytes.Clone(b))
	w.mu.Unlock()
	if first {
		<-w.gate
		return len(b), nil
	}
	if w.fail {
		return 0, errors.New("broken pipe")
	}
	return len(b), nil
}

func (w *gateWriter) Close() error { return nil }

// queued waits until n messages are waiting for the next write.
func queued(t *testing.T, c *stdioConn, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.wmu.Lock()
		got := bytes.Count(c.pending, []byte("\n"))
		c.wmu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages waiting to be written after 10s, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func request(t *testing.T, i int) *jsonrpc.Request {
	id, err := jsonrpc.MakeID(float64(i))
	if err != nil {
		t.Fatal(err)
	}
	return &jsonrpc.Request{ID: id, Method: "tools/call", Params: []byte(`{"name":"echo","arguments":{"i":` + strconv.Itoa(i) + `}}`)}
}

// writeAll starts a Write of request i for each i in ids, and returns what
// they return.
func writeAll(t *testing.T, c *stdioConn, ids ...int) <-chan error {
	errs := make(chan error, len(ids))
	for _, i := range ids {
		go func() { errs <- c.Write(context.Background(), request(t, i)) }()
	}
	return errs
}

// TestStdioConnGroupsWrites: messages written while another write is under
// way go out together in the next write, each whole on its line, none lost;
// every caller returns once its own message is written.
func TestStdioConnGroupsWrites(t *testing.T) {
	w := &gateWriter{gate: make(chan struct{})}
	c := newStdioConn(w, nil, nil)
	first := writeAll(t, c, 0)
	queued(t, c, 0)
	for {
		c.wmu.Lock()
		writing := c.written == 0 && c.group == 2
		c.wmu.Unlock()
		if writing {
			break
		}
		time.Sleep(time.Millisecond)
	}
	const n = 10
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i + 1
	}
	rest := writeAll(t, c, ids...)
	queued(t, c, n)
	close(w.gate)
	for _, errs := range []<-chan error{first, rest} {
		for range cap(errs) {
			select {
			case err := <-errs:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("a Write did not return within 10s of its group's write")
			}
		}
	}
	if len(w.writes) != 2 {
		t.Fatalf("%d writes for %d messages, want 2 (the first, then the rest together)", len(w.writes), n+1)
	}
	seen := map[int64]bool{}
	for _, line := range bytes.SplitAfter(bytes.Join(w.writes, nil), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		m, err := jsonrpc.DecodeMessage(bytes.TrimSuffix(line, []byte("\n")))
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		seen[m.(*jsonrpc.Request).ID.Raw().(int64)] = true
	}
	if len(seen) != n+1 {
		t.Fatalf("%d distinct messages written, want %d", len(seen), n+1)
	}
}

// TestStdioConnGroupWriteFails: when the write of a group fails (the
// server is gone), every caller in the group gets the error, none waits
// on, and later writes fail at once.
func TestStdioConnGroupWriteFails(t *testing.T) {
	w := &gateWriter{gate: make(chan struct{}), fail: true}
	c := newStdioConn(w, nil, nil)
	first := writeAll(t, c, 0)
	for {
		c.wmu.Lock()
		writing := c.group == 2
		c.wmu.Unlock()
		if writing {
			break
		}
		time.Sleep(time.Millisecond)
	}
	rest := writeAll(t, c, 1, 2, 3)
	queued(t, c, 3)
	close(w.gate)
	if err := <-first; err != nil {
		t.Fatalf("the first write, which succeeded: %v", err)
	}
	for range 3 {
		select {
		case err := <-rest:
			if err == nil {
				t.Fatal("a Write whose group's write failed returned nil")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a Write whose group's write failed did not return within 10s")
		}
	}
	if err := c.Write(context.Background(), request(t, 4)); err == nil {
		t.Fatal("a Write after a failed one returned nil")
	}
}

// FuzzEncodeRequest holds encodeMessage to the SDK's encoding, byte for
// byte, for requests of any id, method and params (valid JSON or not).
func FuzzEncodeRequest(f *testing.F) {
	f.Add(int64(1099511627777), true, "tools/call", `{"name":"echo","arguments":{"text":"hello world"}}`)
	f.Add(int64(0), true, "ping", ``)
	f.Add(int64(-3), false, "notifications/cancelled", `{"requestId":7, "reason" : "a <b> & c\u2028"}`)
	f.Add(int64(5), true, "tools/call", " {\n\t\"a\" : [1, 2.50, -0, 1e400] } ")
	f.Add(int64(5), true, "m\"x\\y\u00e9\n", `{"x":"\xff\u2029"}`)
	f.Add(int64(9), true, "", `{"unterminated"`)
	f.Add(int64(9), true, "tools/call", `{} {}`)
	f.Fuzz(func(t *testing.T, n int64, hasID bool, method, params string) {
		r := &jsonrpc.Request{Method: method}
		if params != "" {
			r.Params = []byte(params)
		}
		if hasID {
			id, err := jsonrpc.MakeID(float64(n))
			if err != nil {
				t.Skip()
			}
			r.ID = id
		}
		want, werr := jsonrpc.EncodeMessage(r)
		got, gerr := encodeMessage(r)
		if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("encodeMessage(%+v) = %q, %v; the SDK's = %q, %v", r, got, gerr, want, werr)
		}
	})
}

// BenchmarkEncodeRequest: a tools/call as lathe writes it to a server,
// encoded by hand (encodeMessage) and by the SDK.
func BenchmarkEncodeRequest(b *testing.B) {
	id, _ := jsonrpc.MakeID(float64(1 << 40))
	r := &jsonrpc.Request{ID: id, Method: "tools/call", Params: []byte(`{"name":"echo","arguments":{"text":"hello"}}`)}
	b.Run("lathe", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			encodeMessage(r)
		}
	})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			jsonrpc.EncodeMessage(r)
		}
	})
}

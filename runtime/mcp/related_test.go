package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestRelatedBody: on the stream of one call, an elicitation, a sampling
// request and a log message are marked with that call; a mark the server
// wrote itself, naming another call, is replaced; anything else passes
// byte for byte, a long result too, whatever the sizes of the reads.
func TestRelatedBody(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	stream := "event: message\nid: 1\n" +
		`data: {"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"who?","_meta":{"lathe/call":"guess:7"}}}` + "\n\n" +
		`data: {"jsonrpc":"2.0","id":2,"method":"sampling/createMessage","params":{"maxTokens":1,"messages":[]}}` + "\r\n\r\n" +
		`data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + long + `"}}` + "\n\n" +
		`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"lathe-3","progress":1}}` + "\n\n" +
		`data: {"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"` + long + `"}]}}` + "\n\n"
	for name, wrap := range map[string]func(io.Reader) io.Reader{
		"whole": func(r io.Reader) io.Reader { return r }, "bytewise": iotest.OneByteReader, "halves": iotest.HalfReader,
	} {
		b := &relatedBody{ReadCloser: io.NopCloser(wrap(strings.NewReader(stream))), mark: "n0nce:3"}
		out, err := io.ReadAll(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		lines := strings.Split(string(out), "\n")
		var marked []string
		for _, l := range lines {
			data, ok := strings.CutPrefix(l, "data: ")
			if !ok {
				continue
			}
			var m struct {
				Method string
				Params struct {
					Meta map[string]any `json:"_meta"`
				}
			}
			if err := json.Unmarshal([]byte(strings.TrimSuffix(data, "\r")), &m); err != nil {
				t.Fatalf("%s: a data line is no longer JSON: %v", name, err)
			}
			if v, ok := m.Params.Meta[relatedKey]; ok {
				if v != "n0nce:3" {
					t.Errorf("%s: %s marked %v, want the stream's call", name, m.Method, v)
				}
				marked = append(marked, m.Method)
			}
		}
		if strings.Join(marked, ",") != "elicitation/create,sampling/createMessage,notifications/message" {
			t.Errorf("%s: marked %v", name, marked)
		}
		for _, keep := range []string{"event: message\nid: 1\n", `"progressToken":"lathe-3","progress":1}}` + "\n\n",
			`data: {"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"` + long + `"}]}}` + "\n\n"} {
			if !bytes.Contains(out, []byte(keep)) {
				t.Errorf("%s: %.60q… did not pass as it was", name, keep)
			}
		}
	}
}

// TestNamed: only a mark with the server's own secret names a call; one a
// server made up names none, and the request is attributed as one that
// names no call.
func TestNamed(t *testing.T) {
	s := &server{nonce: newNonce(), inflight: map[uint64]*inflight{}}
	a := s.track(&inflight{session: "alice"})
	b := s.track(&inflight{session: "bob"})
	bg := context.Background()
	if id, f := s.caller(s.named(bg, map[string]any{relatedKey: s.nonce + ":" + itoa(b)})); id != b || f == nil {
		t.Errorf("the server's own mark of bob's call: got call %d", id)
	}
	for _, forged := range []string{"guess:" + itoa(b), ":" + itoa(b), s.nonce[:31] + ":" + itoa(b), itoa(b), s.nonce + ":x"} {
		if id, f := s.caller(s.named(bg, map[string]any{relatedKey: forged})); f != nil {
			t.Errorf("the forged mark %q named call %d", forged, id)
		}
	}
	_ = a
}

func itoa(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// BenchmarkRelatedBody: reading the event stream that answers a call
// through relatedBody, against reading it as it is (raw), for a small
// result, a 1 MiB one, and a stream with an elicitation to mark.
func BenchmarkRelatedBody(b *testing.B) {
	small := "event: message\nid: 1\ndata: " + `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"echo: hello"}]}}` + "\n\n"
	large := "event: message\nid: 1\ndata: " + `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` +
		strings.Repeat("x", 1<<20) + `"}]}}` + "\n\n"
	asks := "event: message\ndata: " + `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"who?","requestedSchema":{"type":"object"}}}` +
		"\n\n" + small
	for _, c := range []struct{ name, stream string }{{"small", small}, {"1MiB", large}, {"elicitation", asks}} {
		for _, marked := range []bool{false, true} {
			name := c.name + "/raw"
			if marked {
				name = c.name + "/marked"
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(c.stream)))
				b.ReportAllocs()
				for b.Loop() {
					// As the SDK reads a body: through its Read method.
					var r io.Reader = struct{ io.Reader }{strings.NewReader(c.stream)}
					if marked {
						r = &relatedBody{ReadCloser: io.NopCloser(r), mark: "0123456789abcdef0123456789abcdef:7"}
					}
					if _, err := io.Copy(io.Discard, r); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

package mcp

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// TestCountBody: the log and progress notifications of an event stream are
// counted however the stream is cut into reads, the stream passes as it
// is, and neither a result that quotes a notification's method (short or
// long) nor a request nor a line that is no data line is counted; a long
// notification is.
func TestCountBody(t *testing.T) {
	stream := strings.Join([]string{
		": a comment",
		"event: message",
		`data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"one"}}`,
		"",
		`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"lathe-1","progress":1}}`,
		"",
		`data:{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"two"}}` + "\r",
		"",
		`data: {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\"method\":\"notifications/message\""}]}}`,
		"",
		`data: {"jsonrpc":"2.0","id":2,"method":"notifications/message","params":{}}`,
		"",
		`notdata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"no"}}`,
		"",
		`data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("long ", 2000) + `"}}`,
		"",
		`data: {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"` + strings.Repeat("big ", 2000) + `notifications/message"}]}}`,
		"",
	}, "\n")
	for name, wrap := range map[string]func(io.Reader) io.Reader{
		"whole":    func(r io.Reader) io.Reader { return r },
		"one byte": iotest.OneByteReader,
		"halves":   iotest.HalfReader,
	} {
		var o order
		b := &countBody{ReadCloser: io.NopCloser(wrap(strings.NewReader(stream))), order: &o}
		out, err := io.ReadAll(b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, []byte(stream)) {
			t.Errorf("%s: the stream changed", name)
		}
		if o.read != 4 {
			t.Errorf("%s: %d notifications counted, want 4", name, o.read)
		}
	}
}

// TestSettleForgetsTheUnhandled: a notification counted but never handled
// (the SDK dropped it as malformed) holds up one call for settleTimeout at
// most, and no later call; one handled in time ends the wait at once.
func TestSettleForgetsTheUnhandled(t *testing.T) {
	ctx := t.Context()
	var o order
	o.read = 1
	start := time.Now()
	o.settle(ctx)
	if d := time.Since(start); d < settleTimeout || d > 10*settleTimeout {
		t.Errorf("the first wait took %v, want about %v", d, settleTimeout)
	}
	start = time.Now()
	o.settle(ctx)
	if d := time.Since(start); d > settleTimeout/2 {
		t.Errorf("a later call waited %v for the dropped notification", d)
	}
	o.mu.Lock()
	o.read++
	o.mu.Unlock()
	go func() {
		time.Sleep(10 * time.Millisecond)
		o.noteHandled()
	}()
	start = time.Now()
	o.settle(ctx)
	if d := time.Since(start); d > settleTimeout/2 {
		t.Errorf("a handled notification did not end the wait: %v", d)
	}
}

// BenchmarkCountBody reads the event stream of one call's answer (a
// result of 4 KiB or 64 KiB of text) as the SDK does, in 32 KiB reads,
// through countBody and raw, and reports each one's time per stream and
// the ratio.
func BenchmarkCountBody(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10} {
		text := strings.Repeat("x", size)
		stream := []byte(`data: {"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + text + `"}]}}` + "\n\n")
		buf := make([]byte, 32<<10)
		read := func(r io.Reader) {
			for {
				if _, err := r.Read(buf); err != nil {
					return
				}
			}
		}
		b.Run(strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			var raw, counted time.Duration
			var o order
			for range b.N {
				t0 := time.Now()
				read(bytes.NewReader(stream))
				t1 := time.Now()
				read(&countBody{ReadCloser: io.NopCloser(bytes.NewReader(stream)), order: &o})
				counted += time.Since(t1)
				raw += t1.Sub(t0)
			}
			b.ReportMetric(float64(raw.Nanoseconds())/float64(b.N), "raw-ns/stream")
			b.ReportMetric(float64(counted.Nanoseconds())/float64(b.N), "counted-ns/stream")
			b.ReportMetric(float64(counted)/float64(raw), "x-raw")
		})
	}
}

// BenchmarkHoldLevel: what a call whose caller names no level pays for
// holdLevel on its path (most calls: every client before 2026-07-28),
// against the raw floor of a deferred call of an empty function.
func BenchmarkHoldLevel(b *testing.B) {
	s := &server{pool: &Pool{}}
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			func() { defer noop() }()
		}
	})
	b.Run("unnamed", func(b *testing.B) {
		for b.Loop() {
			func() { defer s.holdLevel(context.Background(), nil, "")() }()
		}
	})
}

//go:noinline
func noop() {}

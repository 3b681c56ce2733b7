package server

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// A line longer than the cap is answered with a parse error and skipped,
// without being kept whole; the lines after it pass.
func TestLineFilterTooLong(t *testing.T) {
	ok := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"
	in := strings.Repeat("x", 300) + "\n" + ok + strings.Repeat(" ", 40) + "\n" + strings.Repeat("[", 200)
	var out strings.Builder
	f := &lineFilter{r: bufio.NewReaderSize(strings.NewReader(in), 16), w: &out, max: 100}
	got, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != ok {
		t.Errorf("passed on %q, want only %q", got, ok)
	}
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: a message is at most 100 bytes"}}` + "\n"
	if out.String() != want+want {
		t.Errorf("answered:\n%s\nwant twice:\n%s", out.String(), want)
	}
}

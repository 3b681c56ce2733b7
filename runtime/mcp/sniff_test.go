package mcp

import (
	"bytes"
	"io"
	"testing"
)

// A JSON body too large to screen passes byte for byte, the part read to
// find that out and the rest alike.
func TestSniffBodyTooLargePassesWhole(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), (maxSniff+100_000)/16)
	b := &sniffBody{ReadCloser: io.NopCloser(bytes.NewReader(body)), cap: newCapture()}
	got, err := io.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("read %d bytes, not the %d of the body as it was", len(got), len(body))
	}
}

// Package tail keeps and shows the end of what a tool wrote: the tail of
// its standard error that goes into a failure's message, for every runtime
// that runs a tool's own code (process, vfs, wasm), so that a failure reads
// the same whichever ran it.
package tail

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// Kept is how much of the end of standard error a call keeps, and Shown
// how much of it a failure's message shows.
const (
	Kept  = 8 << 10
	Shown = 2 << 10
)

// Buffer keeps the last Max bytes written to it. It is safe for concurrent
// use: a runtime may read it while a copying goroutine still writes.
type Buffer struct {
	Max int

	mu  sync.Mutex
	buf []byte
}

// Write keeps the end of p; it never fails.
func (w *Buffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	if n >= w.Max {
		w.buf = append(w.buf[:0], p[n-w.Max:]...)
		return n, nil
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) > 2*w.Max {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-w.Max:]...)
	}
	return n, nil
}

// Bytes returns a copy of at most the last Max bytes written.
func (w *Buffer) Bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.buf
	if len(b) > w.Max {
		b = b[len(b)-w.Max:]
	}
	return append([]byte(nil), b...)
}

// Text turns output into valid UTF-8 text.
func Text(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// StderrNote renders the end of standard error for a failure's message:
// "" when there is none, else a line "stderr:" and at most [Shown] bytes.
func StderrNote(stderr []byte) string {
	s := strings.TrimRight(Text(stderr), "\n")
	if s == "" {
		return ""
	}
	return "\nstderr:\n" + Last(s, Shown)
}

// Last returns the end of s, at most n bytes, starting at a line if it
// can and at a rune in any case, marked with "…" when cut.
func Last(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	if i := strings.IndexByte(s[cut:], '\n'); i >= 0 && i < n/2 {
		cut += i + 1
	}
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return "…" + s[cut:]
}

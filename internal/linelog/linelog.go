// Package linelog turns what is written to an io.Writer into lines, for
// logging a stream (a server's standard error, a transport's trace) one
// record a line.
package linelog

import (
	"bytes"
	"io"
	"sync"
)

// New returns a writer that calls emit with each line written to it,
// without its newline, one call at a time. With max > 0 the writer never
// holds more than max bytes of an unfinished line: past that, what it holds
// is emitted as a piece, so that a stream without newlines cannot make it
// keep all of it (a line that ends within one Write is emitted whole). With
// max 0 an unfinished line is held whole.
func New(max int, emit func(line []byte)) io.Writer {
	return &writer{max: max, emit: emit}
}

type writer struct {
	max  int
	emit func([]byte)

	mu  sync.Mutex
	buf []byte
}

func (w *writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if w.max <= 0 || len(p) < w.max-len(w.buf) {
				w.buf = append(w.buf, p...)
				break
			}
			room := w.max - len(w.buf)
			w.buf = append(w.buf, p[:room]...)
			p = p[room:]
		} else {
			w.buf = append(w.buf, p[:i]...)
			p = p[i+1:]
		}
		w.emit(w.buf)
		w.buf = w.buf[:0]
	}
	return n, nil
}

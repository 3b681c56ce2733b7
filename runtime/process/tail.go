package process

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	buf []byte
	max int
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= w.max {
		w.buf = append(w.buf[:0], p[len(p)-w.max:]...)
		return n, nil
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) > 2*w.max {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-w.max:]...)
	}
	return n, nil
}

// bytes returns at most the last max bytes.
func (w *tailBuffer) bytes() []byte {
	if len(w.buf) > w.max {
		return w.buf[len(w.buf)-w.max:]
	}
	return w.buf
}

package cli

import (
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"golang.org/x/term"
)

// terminalSafe returns w as it is, unless w is a terminal: then a writer that
// shows each control character of what a tool wrote as an escape (\x1b,
// \r, \u009b) instead of letting the terminal act on it. A tool's output is
// the model's and the tool's words; on a terminal, an escape sequence in
// it could set the window title, rewrite what lathe printed before it, move
// the cursor over a question, or, on some terminals, answer back into the
// shell's input. Newlines and tabs pass, so text reads as it should; output
// to a pipe or a file is untouched, byte for byte.
func terminalSafe(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return escapeWriter{w}
	}
	return w
}

// escapeWriter writes what it is given with its control characters and
// invalid UTF-8 escaped. Each Write is escaped on its own: the CLI writes
// whole strings, so a character is never split between two writes.
type escapeWriter struct{ w io.Writer }

func (e escapeWriter) Write(p []byte) (int, error) {
	if _, err := e.w.Write(escapeControls(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// escapeControls returns p with every control character but newline and
// tab (C0, DEL and C1), and every byte that is not valid UTF-8, written as
// a Go escape.
func escapeControls(p []byte) []byte {
	out := make([]byte, 0, len(p))
	for len(p) > 0 {
		r, n := utf8.DecodeRune(p)
		switch {
		case r == utf8.RuneError && n == 1:
			out = fmt.Appendf(out, `\x%02x`, p[0])
		case r == '\n' || r == '\t':
			out = append(out, p[0])
		case r == '\r':
			out = append(out, `\r`...)
		case r < 0x20 || r == 0x7f:
			out = fmt.Appendf(out, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0:
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, p[:n]...)
		}
		p = p[n:]
	}
	return out
}

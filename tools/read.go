package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// sniffLen is how much of a file's head is searched for a NUL byte, the mark
// of a binary file, as git and grep do.
const sniffLen = 8 << 10

type readIn struct {
	Path   string `json:"path" jsonschema:"description=File to read; relative to the workspace root"`
	Offset int    `json:"offset,omitempty" jsonschema:"description=Number of the first line to return; lines count from 1,default=1,minimum=1"`
	Limit  int    `json:"limit,omitempty" jsonschema:"description=Most lines to return; absent means as many as fit the size cap,minimum=1"`
}

func (s *set) readTool() (tool.Tool, error) {
	return builtin.Func(tool.Definition{
		Name:    ReadFile,
		Summary: "Read a text file of the workspace, or a range of its lines.",
		Description: fmt.Sprintf(`Read a text file of the workspace and return its lines as plain text, exactly as they are in the file.

Use offset (the first line, counting from 1) and limit (how many lines) to read part of a long file. One call returns at most %d bytes; when a file is longer, or only part of it was asked for, a final note in square brackets gives the lines shown, the file's total number of lines and the offset to read on from.

Binary files (a NUL byte in the first 8 KiB, or bytes that are not UTF-8) are refused. Paths are relative to the workspace root; paths that lead outside it are refused.`, s.opts.MaxReadBytes),
		Annotations: readOnly("Read file"),
		Resources:   []tool.ResourceArg{{Arg: "path", Kind: tool.ResourcePath}},
	}, s.readFile)
}

func (s *set) readFile(ctx context.Context, in readIn) (string, error) {
	rel, err := s.ws.Resolve(in.Path)
	if err != nil {
		return "", err
	}
	name := display(rel)
	// Only a regular file is opened: a FIFO or a device could block the
	// call or never end.
	f, _, err := s.ws.openFile(rel)
	switch {
	case errors.Is(err, syscall.EISDIR):
		return "", fmt.Errorf("cannot read %q: it is a directory; use %s to see what it holds", name, ListDir)
	case err != nil:
		return "", fsError("read", rel, err)
	}
	defer f.Close()

	offset := max(in.Offset, 1)
	last := int(^uint(0) >> 1)
	if in.Limit > 0 && in.Limit <= last-offset {
		last = offset + in.Limit - 1
	}
	r, err := readLines(ctx, f, offset, last, contentBudget(s.opts.MaxReadBytes))
	switch {
	case errors.Is(err, errBinary):
		return "", fmt.Errorf("cannot read %q: %w", name, err)
	case err != nil:
		return "", fsError("read", rel, err)
	}

	if r.total == 0 {
		if offset > 1 {
			return "", fmt.Errorf("offset %d is past the end of %q, which is empty", offset, name)
		}
		return fmt.Sprintf("[%q is empty]", name), nil
	}
	if offset > r.total {
		return "", fmt.Errorf("offset %d is past the end of %q, which has %d lines", offset, name, r.total)
	}
	text := r.text
	note := r.note(offset, name)
	if note == "" {
		return text, nil
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return text + note, nil
}

// contentBudget is the share of max that file content may take; the rest is
// kept for the closing note, so that an engine whose output cap equals max
// (both default to 256 KiB) never cuts off the note that says how to read on.
func contentBudget(max int) int {
	return max - min(256, max/4)
}

// lines is what readLines found.
type lines struct {
	text        string
	first, last int  // the lines in text; last is 0 when there are none
	total       int  // lines in the file; a final line without a newline counts
	capped      bool // the size budget ended text before the lines asked for
	cutLine     bool // line first was longer than the budget and was cut
	budget      int
}

func (r *lines) note(offset int, name string) string {
	switch {
	case r.cutLine:
		return fmt.Sprintf("[line %d of %d is longer than the %d-byte cap and was cut; to read on, call %s with offset=%d]",
			r.first, r.total, r.budget, ReadFile, r.first+1)
	case r.capped:
		return fmt.Sprintf("[showing lines %d-%d of %d: output capped at %d bytes; to read on, call %s with offset=%d]",
			r.first, r.last, r.total, r.budget, ReadFile, r.last+1)
	case r.last < r.total:
		return fmt.Sprintf("[showing lines %d-%d of %d; to read on, call %s with offset=%d]",
			r.first, r.last, r.total, ReadFile, r.last+1)
	case r.first > 1:
		return fmt.Sprintf("[showing lines %d-%d of %d]", r.first, r.last, r.total)
	}
	return ""
}

var errBinary = errors.New("binary file")

// readLines streams f once: it keeps lines first to last within budget bytes,
// counts every line and checks that the whole file is text. Memory stays
// bounded by the budget and the reader's buffer, however long the file or its
// lines.
func readLines(ctx context.Context, f io.Reader, first, last, budget int) (*lines, error) {
	br := bufio.NewReaderSize(f, 64<<10)
	head, err := br.Peek(sniffLen)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return nil, fmt.Errorf("%w (it holds NUL bytes); only text files can be read", errBinary)
	}
	r := &lines{budget: budget}
	var (
		out       []byte
		lineStart int  // where the current line begins in out
		full      bool // no more lines are kept
		check     utf8Check
		n         = 1 // the number of the line being read
		pending   bool
	)
	for i := 0; ; i++ {
		if i%64 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			pending = true
			if !check.write(chunk) {
				return nil, fmt.Errorf("%w (line %d is not valid UTF-8); only text files can be read", errBinary, n)
			}
			if !full && n >= first && n <= last {
				out = append(out, chunk...)
				if r.first == 0 {
					r.first = n
				}
				if len(out) > budget {
					full, r.capped = true, true
					if n == r.first {
						// A single line longer than the budget: show its start
						// rather than nothing, cut where a rune begins.
						cut := budget
						for cut > 0 && !utf8.RuneStart(out[cut]) {
							cut--
						}
						out = out[:cut]
						r.cutLine, r.last = true, n
					} else {
						out = out[:lineStart]
					}
				}
			}
			if chunk[len(chunk)-1] == '\n' {
				if !full && n >= first && n <= last {
					r.last = n
				}
				n++
				pending = false
				lineStart = len(out)
				if n > last {
					full = true
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
	if !check.done() {
		return nil, fmt.Errorf("%w (line %d is not valid UTF-8); only text files can be read", errBinary, n)
	}
	r.total = n - 1
	if pending {
		r.total = n
		if !full && n >= first && n <= last {
			r.last = n
		}
	}
	r.text = string(out)
	return r, nil
}

// utf8Check validates UTF-8 written to it in pieces, which may split a rune.
type utf8Check struct {
	carry [utf8.UTFMax]byte
	n     int
}

// write reports whether p, following what came before, is still valid UTF-8.
func (u *utf8Check) write(p []byte) bool {
	if u.n > 0 {
		// Complete the rune split at the end of the previous piece.
		var buf [utf8.UTFMax]byte
		k := copy(buf[:], u.carry[:u.n])
		take := 0
		for ; take < len(p) && k < len(buf) && !utf8.FullRune(buf[:k]); take++ {
			buf[k] = p[take]
			k++
		}
		if !utf8.FullRune(buf[:k]) {
			u.n = copy(u.carry[:], buf[:k])
			return true
		}
		r, size := utf8.DecodeRune(buf[:k])
		if r == utf8.RuneError && size <= 1 {
			return false
		}
		p = p[size-u.n:]
		u.n = 0
	}
	// Hold back a rune cut off at the end of p, for the next piece.
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				u.n = copy(u.carry[:], p[i:])
				p = p[:i]
			}
			break
		}
	}
	return utf8.Valid(p)
}

// done reports whether the input ended on a whole rune.
func (u *utf8Check) done() bool { return u.n == 0 }

package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

const (
	// maxGrepLine is the longest line grep reads; a file with a longer one
	// (minified code, a data dump) is skipped from there on.
	maxGrepLine = 1 << 20
	// maxShownLine is how much of a matching line is shown; the model can
	// read the rest with read_file.
	maxShownLine = 500
)

type grepIn struct {
	Pattern         string `json:"pattern" jsonschema:"description=Regular expression in Go (RE2) syntax"`
	Path            string `json:"path,omitempty" jsonschema:"description=File or directory to search; relative to the workspace root,default=."`
	Glob            string `json:"glob,omitempty" jsonschema:"description=Search only files whose paths match this glob; a glob without / is matched against file names at any depth (e.g. *.go)"`
	CaseInsensitive bool   `json:"case_insensitive,omitempty" jsonschema:"description=Match letters of either case,default=false"`
}

func (s *set) grepTool() (tool.Tool, error) {
	return builtin.Func(tool.Definition{
		Name:    Grep,
		Summary: "Search file contents for a regular expression.",
		Description: fmt.Sprintf(`Search the text files of the workspace (or of one directory or file in it) for lines that match a regular expression, in Go's RE2 syntax.

Each match is one line of output, "path:line:text", with the path relative to the workspace root and lines counted from 1; a matching line longer than %d bytes is cut. Set glob to search only some files ("*.go" matches file names at any depth, "cmd/**/*.go" whole paths) and case_insensitive to ignore case.

Binary files, .git directories, symbolic links and special files (FIFOs, devices, sockets) are skipped. A path that holds a control character, a quote, a backslash or bytes that are not UTF-8 is shown quoted, with Go escapes ("a\nb"). At most %d matches are returned; a note says when there were more.`, maxShownLine, s.opts.MaxGrepResults),
		Annotations: readOnly("Grep"),
		Resources:   []tool.ResourceArg{{Arg: "path", Kind: tool.ResourcePath}},
	}, s.grep)
}

func (s *set) grep(ctx context.Context, in grepIn) (string, error) {
	expr := in.Pattern
	if in.CaseInsensitive {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return "", invalidArg("bad regular expression %q: %v", in.Pattern, regexpReason(err))
	}
	var filter []string
	if in.Glob != "" {
		if filter, err = parseGlob(in.Glob); err != nil {
			return "", err
		}
	}
	p := in.Path
	if p == "" {
		p = "."
	}
	rel, err := s.ws.Resolve(p)
	if err != nil {
		return "", err
	}
	fi, err := s.ws.lstat(rel)
	if err != nil {
		return "", fsError("search", rel, err)
	}

	g := &grepper{re: re, max: s.opts.MaxGrepResults, filter: filter, byName: !strings.Contains(in.Glob, "/")}
	if !fi.IsDir() {
		// A file named outright is searched whatever the glob says, and
		// one that cannot be searched is reported.
		f, _, err := s.ws.openFile(rel)
		if err != nil {
			return "", fsError("search", rel, err)
		}
		err = g.file(ctx, f, filepath.ToSlash(rel), true)
		f.Close()
	} else {
		base := filepath.ToSlash(rel)
		err = s.walk(ctx, base, func(p string, d fs.DirEntry, in dir) (bool, error) {
			switch {
			case d.IsDir():
				return d.Name() != ".git" || p == base, nil
			case !d.Type().IsRegular() || !g.wants(p):
				// Links, FIFOs, devices and sockets are never opened.
				return false, nil
			}
			// Files that cannot be opened (or are no longer regular files)
			// are passed over.
			f, _, err := in.openFile(d.Name())
			if err != nil {
				return false, nil
			}
			err = g.file(ctx, f, p, false)
			f.Close()
			if err != nil {
				return false, err
			}
			if g.more {
				return false, fs.SkipAll
			}
			return false, nil
		})
	}
	if err != nil {
		return "", err
	}
	return g.report(in.Pattern, display(rel)), nil
}

// grepper gathers the matches of one grep call.
type grepper struct {
	re     *regexp.Regexp
	max    int
	filter []string // glob elements; nil matches every file
	byName bool     // the filter is matched against base names

	out      strings.Builder
	n        int
	more     bool // a match past the cap was found
	binaries int
	longs    []string
}

func (g *grepper) wants(p string) bool {
	switch {
	case g.filter == nil:
		return true
	case g.byName:
		return matchGlob(g.filter, []string{path.Base(p)})
	}
	return matchGlob(g.filter, strings.Split(p, "/"))
}

// file searches f, the file p (slash-separated and relative to the root). A
// file that cannot be read is reported when it was named outright (named),
// and passed over in a directory walk.
func (g *grepper) file(ctx context.Context, f io.Reader, p string, named bool) error {
	br := bufio.NewReaderSize(f, 64<<10)
	head, err := br.Peek(sniffLen)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		if named {
			return fsError("search", filepath.FromSlash(p), err)
		}
		return nil
	}
	shown := showName(p)
	if bytes.IndexByte(head, 0) >= 0 {
		g.binaries++
		return nil
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 64<<10), maxGrepLine)
	for line := 1; sc.Scan(); line++ {
		if line%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		text := sc.Bytes()
		if !g.re.Match(text) {
			continue
		}
		if g.n == g.max {
			g.more = true
			return nil
		}
		g.n++
		text = bytes.TrimSuffix(text, []byte("\r"))
		cut := len(text) > maxShownLine
		if cut {
			i := maxShownLine
			for i > 0 && !utf8.RuneStart(text[i]) {
				i--
			}
			text = text[:i]
		}
		fmt.Fprintf(&g.out, "%s:%d:%s", shown, line, text)
		if cut {
			g.out.WriteString(" …")
		}
		g.out.WriteByte('\n')
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		g.longs = append(g.longs, shown)
	}
	return nil
}

func (g *grepper) report(pattern, where string) string {
	var b strings.Builder
	if g.n == 0 {
		fmt.Fprintf(&b, "[no matches for %q in %q]\n", pattern, where)
	}
	b.WriteString(g.out.String())
	if g.more {
		fmt.Fprintf(&b, "[stopped at %d matches; narrow the pattern, path or glob to see the rest]\n", g.max)
	}
	if g.binaries > 0 {
		fmt.Fprintf(&b, "[%d binary files skipped]\n", g.binaries)
	}
	if len(g.longs) > 0 {
		fmt.Fprintf(&b, "[searched only up to a line longer than %d bytes in: %s]\n", maxGrepLine, strings.Join(g.longs, ", "))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// regexpReason is the part of a regexp error after its generic prefix.
func regexpReason(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return se.Code.String() + ": " + se.Expr
	}
	return err.Error()
}

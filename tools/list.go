package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

type listIn struct {
	Path string `json:"path,omitempty" jsonschema:"description=Directory to list; relative to the workspace root,default=."`
}

func (s *set) listTool() (tool.Tool, error) {
	return builtin.Func(tool.Definition{
		Name:    ListDir,
		Summary: "List the entries of a directory.",
		Description: `List the entries of a directory of the workspace (its root by default), one a line, sorted by name.

Directories end in "/"; symbolic links are shown as "name -> target". Hidden entries are included. A name that holds a control character, a quote, a backslash, " -> " or bytes that are not UTF-8 is shown quoted, with Go escapes ("a\nb"). Paths are relative to the workspace root; paths that lead outside it are refused.`,
		Annotations: readOnly("List directory"),
		Resources:   []tool.ResourceArg{{Arg: "path", Kind: tool.ResourcePath}},
	}, s.listDir)
}

func (s *set) listDir(ctx context.Context, in listIn) (string, error) {
	p := in.Path
	if p == "" {
		p = "."
	}
	rel, err := s.ws.Resolve(p)
	if err != nil {
		return "", err
	}
	name := display(rel)
	fi, err := s.ws.lstat(rel)
	switch {
	case err != nil:
		return "", fsError("list", rel, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return "", raced(rel)
	case fi.Mode().IsRegular():
		return "", fmt.Errorf("cannot list %q: it is a file, not a directory; use %s to read it", name, ReadFile)
	case !fi.IsDir():
		return "", fmt.Errorf("cannot list %q: %v, not a directory", name, notRegular(fi))
	}
	d, err := s.ws.openDir(rel)
	if err != nil {
		return "", fsError("list", rel, err)
	}
	defer d.close()
	entries, err := d.readDir()
	if err != nil {
		return "", fsError("list", rel, err)
	}
	entries = slices.DeleteFunc(entries, func(e fs.DirEntry) bool {
		return s.ws.isHidden(filepath.Join(rel, e.Name()))
	})
	if len(entries) == 0 {
		return fmt.Sprintf("[%q is empty]", name), nil
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(showName(e.Name()))
		switch {
		case e.IsDir():
			b.WriteByte('/')
		case e.Type()&fs.ModeSymlink != 0:
			// The target is shown as the link holds it; following it is
			// subject to the same confinement as any other path.
			if target, err := d.readlink(e.Name()); err == nil {
				b.WriteString(" -> ")
				b.WriteString(showName(target))
			}
		}
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

type globIn struct {
	Pattern string `json:"pattern" jsonschema:"description=Glob pattern matched against paths relative to the workspace root; * matches within one path element and ** matches any number of directories (e.g. **/*.go)"`
}

func (s *set) globTool() (tool.Tool, error) {
	return builtin.Func(tool.Definition{
		Name:    Glob,
		Summary: "Find files and directories whose paths match a glob pattern.",
		Description: fmt.Sprintf(`Find the files and directories of the workspace whose paths, relative to its root, match a glob pattern, and return them sorted, one a line; directories end in "/".

In the pattern, * matches any run of characters within one path element, ? one character and [abc] one of a set, as in a shell; ** as a whole element matches any number of directories, none included: "**/*.go" finds Go files at every depth, "cmd/**" everything under cmd. * matches hidden names too. .git directories are searched only when the pattern names them.

Symbolic links are listed if they point inside the workspace but never followed. A path that holds a control character, a quote, a backslash or bytes that are not UTF-8 is shown quoted, with Go escapes ("a\nb"). At most %d paths are returned; a note says how many more matched.`, s.opts.MaxGlobResults),
		Annotations: readOnly("Glob"),
	}, s.glob)
}

func (s *set) glob(ctx context.Context, in globIn) (string, error) {
	pat, err := parseGlob(in.Pattern)
	if err != nil {
		return "", err
	}
	// Walk from the deepest directory the pattern names literally, not from
	// the root: "cmd/lathe/*.go" reads one directory.
	base := s.literalBase(pat)
	matchGit := slices.Contains(pat, ".git")
	var found []string
	err = s.walk(ctx, base, func(p string, d fs.DirEntry, _ dir) (bool, error) {
		elems := strings.Split(p, "/")
		if d.IsDir() && d.Name() == ".git" && !matchGit {
			return false, nil
		}
		if p != "." && matchGlob(pat, elems) {
			switch {
			case d.IsDir():
				found = append(found, showName(p)+"/")
			case d.Type()&fs.ModeSymlink != 0:
				// A link is listed only where it leads inside, so that every
				// path glob returns is one the other tools accept.
				if _, err := s.ws.Resolve(filepath.FromSlash(p)); err == nil {
					found = append(found, showName(p))
				}
			default:
				found = append(found, showName(p))
			}
		}
		return d.IsDir() && (p == "." || matchPrefix(pat, elems)), nil
	})
	if err != nil {
		return "", err
	}
	if len(found) == 0 {
		return fmt.Sprintf("[no paths match %q]", in.Pattern), nil
	}
	slices.Sort(found)
	more := 0
	if len(found) > s.opts.MaxGlobResults {
		more = len(found) - s.opts.MaxGlobResults
		found = found[:s.opts.MaxGlobResults]
	}
	out := strings.Join(found, "\n")
	if more > 0 {
		out += fmt.Sprintf("\n[%d more paths matched and are not shown; narrow the pattern to see them]", more)
	}
	return out, nil
}

// literalBase returns the deepest directory that the leading literal
// elements of pat name, to walk from. It stops short of a symbolic link, so
// that the walk lists the link rather than following it.
func (s *set) literalBase(pat []string) string {
	base := "."
	for i := 0; i < len(pat)-1 && !hasMeta(pat[i]); i++ {
		next := path.Join(base, pat[i])
		fi, err := s.ws.lstat(filepath.FromSlash(next))
		if err != nil || !fi.IsDir() {
			break
		}
		base = next
	}
	return base
}

// walk visits base and everything under it in the workspace in lexical
// order, calling visit with each path (slash-separated, relative to the
// root), its entry and the directory that holds it (nil for base itself,
// which must be a directory).
// visit says whether to descend into a directory. Directories are opened one
// element at a time from the one above, never through a symbolic link:
// links are reported, never followed, and a directory swapped for a link
// while the walk runs is passed over. What is neither a regular file nor a
// directory is reported with its type, never opened. A missing base is no
// error: nothing is under it.
func (s *set) walk(ctx context.Context, base string, visit func(p string, e fs.DirEntry, in dir) (bool, error)) error {
	rel := filepath.FromSlash(base)
	if s.ws.isHidden(rel) {
		return nil
	}
	fi, err := s.ws.lstat(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fsError("search", rel, err)
	}
	if !fi.IsDir() {
		// Only a directory is walked; base was one when the caller looked,
		// and is no longer.
		return nil
	}
	descend, err := visit(base, fs.FileInfoToDirEntry(fi), nil)
	if err != nil || !descend {
		return skipAll(err)
	}
	d, err := s.ws.openDir(rel)
	if err != nil {
		return fsError("search", rel, err)
	}
	defer d.close()
	return skipAll(s.walkDir(ctx, d, base, visit))
}

func skipAll(err error) error {
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

func (s *set) walkDir(ctx context.Context, d dir, p string, visit func(string, fs.DirEntry, dir) (bool, error)) error {
	entries, err := d.readDir()
	if err != nil {
		// An unreadable directory below is skipped, not fatal: the rest of
		// the tree still answers the question.
		return nil
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		cp := path.Join(p, e.Name())
		if s.ws.isHidden(filepath.FromSlash(cp)) {
			continue
		}
		descend, err := visit(cp, e, d)
		if err != nil {
			return err
		}
		if !e.IsDir() || !descend {
			continue
		}
		child, err := d.openDir(e.Name())
		if err != nil {
			// Gone, unreadable, or swapped for a link since it was listed.
			continue
		}
		err = s.walkDir(ctx, child, cp, visit)
		child.close()
		if err != nil {
			return err
		}
	}
	return nil
}

// parseGlob checks a glob pattern and splits it into path elements.
func parseGlob(pattern string) ([]string, error) {
	if pattern == "" {
		return nil, invalidArg("the glob pattern is empty")
	}
	if strings.HasPrefix(pattern, "/") || filepath.IsAbs(pattern) {
		return nil, &tool.Error{Kind: tool.KindDenied,
			Message: fmt.Sprintf("pattern %q is outside the workspace; patterns are relative to its root", pattern)}
	}
	var elems []string
	for _, e := range strings.Split(pattern, "/") {
		switch e {
		case "", ".":
			continue
		case "..":
			return nil, &tool.Error{Kind: tool.KindDenied,
				Message: fmt.Sprintf("pattern %q is outside the workspace; patterns may not contain ..", pattern)}
		case "**":
			if len(elems) > 0 && elems[len(elems)-1] == "**" {
				continue
			}
		}
		if _, err := path.Match(e, ""); err != nil {
			return nil, invalidArg("bad glob pattern %q: %v", pattern, err)
		}
		elems = append(elems, e)
	}
	if len(elems) == 0 {
		return nil, invalidArg("the glob pattern %q matches only the workspace root itself", pattern)
	}
	return elems, nil
}

func hasMeta(elem string) bool { return strings.ContainsAny(elem, `*?[\`) }

// matchGlob reports whether the path elements name match the pattern
// elements pat, where a "**" element matches any number of path elements.
func matchGlob(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := len(name); i >= 0; i-- {
				if matchGlob(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// matchPrefix reports whether some path below the directory dir could match
// pat, so that a walk need not enter directories that cannot.
func matchPrefix(pat, dir []string) bool {
	for ; len(dir) > 0; pat, dir = pat[1:], dir[1:] {
		if len(pat) == 0 {
			return false
		}
		if pat[0] == "**" {
			return true
		}
		if ok, _ := path.Match(pat[0], dir[0]); !ok {
			return false
		}
	}
	return len(pat) > 0
}

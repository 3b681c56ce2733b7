package tools

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// newFileMode is the mode of a file write_file creates. It is set
// explicitly, so the process's umask does not apply.
const newFileMode fs.FileMode = 0o644

type writeIn struct {
	Path    string `json:"path" jsonschema:"description=File to write; relative to the workspace root. Missing parent directories are created."`
	Content string `json:"content" jsonschema:"description=The complete new content of the file"`
}

func (s *set) writeTool() (tool.Tool, error) {
	return builtin.Func(tool.Definition{
		Name:    WriteFile,
		Summary: "Create a file or replace its whole content.",
		Description: `Write content to a file of the workspace, creating the file and any missing parent directories, or replacing the file's whole content if it exists.

The write is atomic: the content goes to a temporary file in the same directory, which is flushed to disk and then renamed over the target, so the file is never seen half written. An existing file keeps its permissions. To change part of a file, prefer edit_file.

Paths are relative to the workspace root; paths that lead outside it are refused, as are lathe's own configuration (lathe.toml) and state (.lathe/). Returns the number of bytes written.`,
		Annotations: writes("Write file", true),
		Resources:   []tool.ResourceArg{{Arg: "path", Kind: tool.ResourcePath}},
	}, s.writeFile)
}

func (s *set) writeFile(ctx context.Context, in writeIn) (string, error) {
	rel, err := s.ws.resolveChange(in.Path)
	if err != nil {
		return "", err
	}
	// A directory in the way is left for the rename to refuse, after the
	// temporary file is removed: the rename is where the check cannot race.
	created, err := s.ws.atomicWrite(ctx, rel, []byte(in.Content), nil)
	if err != nil {
		return "", err
	}
	what := "wrote"
	if created {
		what = "created"
	}
	return fmt.Sprintf("%s %q (%d bytes written)", what, display(rel), len(in.Content)), nil
}

// keptMode is the part of an existing file's mode that a rewrite keeps.
func keptMode(fi fs.FileInfo) fs.FileMode {
	return fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

// atomicWrite replaces the file rel with data: a temporary file in the same
// directory is written, synced and renamed over rel, so that rel holds either
// its old content or data, never a part, even across a crash. On failure the
// temporary file is removed and rel is untouched. As with any rename, hard
// links to the old file keep the old content (a hard link to a protected file
// is replaced, never written through), and the owner is the caller's.
//
// The directory is opened once, element by element without following links,
// and the temporary file is created, renamed and removed in that directory:
// a directory swapped for a link meanwhile cannot move the write elsewhere.
// The new file gets mode, or when mode is nil the mode of the file it
// replaces (newFileMode for a new file). created tells whether rel is new.
func (w *Workspace) atomicWrite(ctx context.Context, rel string, data []byte, mode *fs.FileMode) (created bool, err error) {
	d, base, err := w.openParent(rel, true)
	if err != nil {
		return false, fsError("write", rel, err)
	}
	defer d.close()
	perm, created := newFileMode, true
	fi, err := d.lstat(base)
	switch {
	case err == nil && fi.Mode().IsRegular():
		perm, created = keptMode(fi), false
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		return false, raced(rel)
	case err == nil && !fi.IsDir():
		return false, fmt.Errorf("cannot write %q: %v", display(rel), notRegular(fi))
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return false, fsError("write", rel, err)
	}
	if mode != nil {
		perm = *mode
	}
	f, tmp, err := createTemp(d, base)
	if err != nil {
		return false, fsError("write", rel, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			d.remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return false, fsError("write", rel, err)
	}
	if err := f.Chmod(perm); err != nil {
		return false, fsError("write", rel, err)
	}
	if err := f.Sync(); err != nil {
		return false, fsError("write", rel, err)
	}
	if err := f.Close(); err != nil {
		return false, fsError("write", rel, err)
	}
	// The last moment to give up without a trace: past the rename the new
	// content is in place.
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := d.rename(tmp, base); err != nil {
		if fi, serr := d.lstat(base); serr == nil && fi.IsDir() {
			return false, fmt.Errorf("cannot write %q: it is a directory", display(rel))
		}
		return false, fsError("write", rel, err)
	}
	// Best effort: the write has succeeded, and some systems cannot sync a
	// directory.
	d.sync()
	return created, nil
}

// createTemp creates a new, empty file next to base in d, with a name no
// other writer picks, hidden so that directory listings in between skip it.
func createTemp(d dir, base string) (*os.File, string, error) {
	// Keep the name within the 255 bytes most file systems allow.
	if len(base) > 64 {
		base = base[:64]
		for !utf8.ValidString(base) {
			base = base[:len(base)-1]
		}
	}
	var err error
	for range 10 {
		var b [6]byte
		rand.Read(b[:])
		name := "." + base + ".lathe-" + hex.EncodeToString(b[:]) + ".tmp"
		var f *os.File
		f, err = d.create(name, 0o600)
		if err == nil {
			return f, name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	return nil, "", err
}

type editIn struct {
	Path       string `json:"path" jsonschema:"description=File to edit; relative to the workspace root"`
	OldString  string `json:"old_string" jsonschema:"description=Exact text to replace; it must occur exactly once unless replace_all is set,minLength=1"`
	NewString  string `json:"new_string" jsonschema:"description=Text to put in its place"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"description=Replace every occurrence of old_string instead of requiring exactly one,default=false"`
}

func (s *set) editTool() (tool.Tool, error) {
	return builtin.Func(tool.Definition{
		Name:    EditFile,
		Summary: "Replace an exact piece of text in a file.",
		Description: fmt.Sprintf(`Replace old_string with new_string in a text file of the workspace.

old_string must match the file's text exactly, white space and indentation included, and must occur exactly once: include enough surrounding lines to make it unique. Set replace_all to replace every occurrence instead (to rename something, say). The call fails, changing nothing, if old_string does not occur, if it occurs more than once without replace_all, or if new_string equals old_string.

Line endings follow the file: in a file whose lines end in CRLF, "\n" in old_string and new_string stands for "\r\n". The file is rewritten atomically and keeps its permissions. lathe's own configuration (lathe.toml) and state (.lathe/) cannot be edited. Files larger than %d bytes are refused, as are edits whose result would be. Returns the number of replacements made.`, s.opts.MaxEditBytes),
		Annotations: writes("Edit file", false),
		Resources:   []tool.ResourceArg{{Arg: "path", Kind: tool.ResourcePath}},
	}, s.editFile)
}

func (s *set) editFile(ctx context.Context, in editIn) (string, error) {
	if in.OldString == "" {
		return "", invalidArg("old_string is empty; to create a file or replace all of it, use %s", WriteFile)
	}
	if in.OldString == in.NewString {
		return "", invalidArg("old_string and new_string are the same; the edit would change nothing")
	}
	rel, err := s.ws.resolveChange(in.Path)
	if err != nil {
		return "", err
	}
	name := display(rel)
	f, fi, err := s.ws.openFile(rel)
	if err != nil {
		return "", fsError("edit", rel, err)
	}
	defer f.Close()
	// The size is checked before anything is read: a sparse file of some
	// terabytes costs nothing on disk and would take all memory.
	max := int64(s.opts.MaxEditBytes)
	if fi.Size() > max {
		return "", fmt.Errorf("cannot edit %q: it is %d bytes, more than the %d bytes edit_file takes; use %s to replace it whole",
			name, fi.Size(), max, WriteFile)
	}
	// The file may grow after the check: read no more than the cap, and one
	// byte to tell.
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return "", fsError("edit", rel, err)
	}
	if int64(len(data)) > max {
		return "", fmt.Errorf("cannot edit %q: it grew past the %d bytes edit_file takes", name, max)
	}
	if bytes.IndexByte(data[:min(len(data), sniffLen)], 0) >= 0 || !utf8.Valid(data) {
		return "", fmt.Errorf("cannot edit %q: it is a binary file; only text files can be edited", name)
	}
	text := string(data)
	in.OldString, in.NewString = matchLineEndings(text, in.OldString, in.NewString)
	n := strings.Count(text, in.OldString)
	switch {
	case n == 0:
		return "", fmt.Errorf("old_string does not occur in %q; it must match the file exactly, white space and indentation included (read the file to check)", name)
	case n > 1 && !in.ReplaceAll:
		return "", fmt.Errorf("old_string occurs %d times in %q; include more surrounding text to make it unique, or set replace_all to replace all %d", n, name, n)
	}
	if grown := int64(len(text)) + int64(n)*(int64(len(in.NewString))-int64(len(in.OldString))); grown > max {
		return "", fmt.Errorf("cannot edit %q: the result would be %d bytes, more than the %d bytes edit_file writes", name, grown, max)
	}
	if in.ReplaceAll {
		text = strings.ReplaceAll(text, in.OldString, in.NewString)
	} else {
		text = strings.Replace(text, in.OldString, in.NewString, 1)
	}
	mode := keptMode(fi)
	if _, err := s.ws.atomicWrite(ctx, rel, []byte(text), &mode); err != nil {
		return "", err
	}
	if n == 1 {
		return fmt.Sprintf("edited %q: 1 replacement", name), nil
	}
	return fmt.Sprintf("edited %q: %d replacements", name, n), nil
}

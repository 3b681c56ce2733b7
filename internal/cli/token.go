package cli

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/lathe-tools/lathe/internal/statedir"
)

// A token file holds the bearer token of lathe serve --http for one
// workspace. It lives outside the workspace, so that no tool of the
// workspace can read it, in a directory only its owner can open:
// $XDG_STATE_HOME/lathe/tokens (by default ~/.local/state/lathe/tokens), or
// $XDG_RUNTIME_DIR/lathe/tokens when the first lies inside the workspace.
// It is kept across runs, so that a client's configuration goes on working;
// removing it makes a new token at the next start.

// workspaceToken returns the token of the workspace ws and the file that
// keeps it, making both the first time.
func workspaceToken(ws string) (token, file string, err error) {
	dir, err := tokenDir(ws)
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("token directory: %w", err)
	}
	if err := checkPrivate(dir, true); err != nil {
		return "", "", err
	}
	sum := sha256.Sum256([]byte(ws))
	file = filepath.Join(dir, hex.EncodeToString(sum[:16])+".token")
	token, err = readToken(file)
	if errors.Is(err, fs.ErrNotExist) {
		token, err = writeToken(file)
	}
	return token, file, err
}

// tokenDir is the directory of token files: the first candidate that is
// not inside the workspace.
func tokenDir(ws string) (string, error) {
	var dirs []string
	if d, err := statedir.Dir("tokens"); err == nil {
		dirs = append(dirs, d)
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		dirs = append(dirs, filepath.Join(d, "lathe", "tokens"))
	}
	resolved, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return "", err
	}
	for _, d := range dirs {
		// d's own name counts as well as where it leads: a link inside the
		// workspace that leads out could be turned back in by a tool.
		if statedir.Within(ws, d) || statedir.Within(resolved, d) {
			continue
		}
		if in, err := statedir.Inside(d, resolved); err == nil && !in {
			return d, nil
		}
	}
	return "", &usageError{fmt.Errorf("no place for the HTTP token outside the workspace %s (XDG_STATE_HOME and "+
		"XDG_RUNTIME_DIR lie inside it or are unset): give one with --token or $%s", ws, TokenEnv)}
}

// checkPrivate refuses a token file or directory that is a symbolic link,
// is owned by another user, or that others may open: a token another local
// user can read, or swap, protects nothing.
func checkPrivate(path string, dir bool) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	return checkPrivateInfo(path, fi, dir)
}

func checkPrivateInfo(path string, fi fs.FileInfo, dir bool) error {
	what, mode := "file", fs.FileMode(0)
	if dir {
		what, mode = "directory", fs.ModeDir
	}
	if fi.Mode().Type() != mode {
		return &usageError{fmt.Errorf("refusing the token %s %s: it is not a plain %s (%v)", what, path, what, fi.Mode().Type())}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return &usageError{fmt.Errorf("refusing the token %s %s: it belongs to user %d, not to you", what, path, st.Uid)}
	}
	if fi.Mode().Perm()&0o077 != 0 {
		want := "chmod 600"
		if dir {
			want = "chmod 700"
		}
		return &usageError{fmt.Errorf("refusing the token %s %s: its mode %04o lets others open it (%s it, "+
			"and remove the token file if others may have read it)", what, path, fi.Mode().Perm(), want)}
	}
	return nil
}

// readToken reads a token file, without following a symbolic link.
func readToken(file string) (string, error) {
	f, fi, err := statedir.Open(file)
	if errors.Is(err, syscall.ELOOP) {
		return "", &usageError{fmt.Errorf("refusing the token file %s: it is a symbolic link", file)}
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := checkPrivateInfo(file, fi, false); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(f, 1024))
	if err != nil {
		return "", err
	}
	t := strings.TrimSpace(string(b))
	if len(t) < 32 || strings.Trim(t, "0123456789abcdef") != "" {
		return "", &usageError{fmt.Errorf("refusing the token file %s: it holds no token lathe made (remove it to "+
			"make a new one)", file)}
	}
	return t, nil
}

// writeToken makes a token and writes it to file whole, so that a reader
// never sees half a token, and a lathe that made one at the same moment
// wins alone: the loser reads the winner's.
func writeToken(file string) (string, error) {
	token, err := newToken()
	if err != nil {
		return "", err
	}
	if err := statedir.CreateFile(file, []byte(token+"\n")); errors.Is(err, fs.ErrExist) {
		return readToken(file)
	} else if err != nil {
		return "", err
	}
	return token, nil
}

// newToken makes a token of 192 random bits.
func newToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// Package trust records a person's approval of a workspace configuration,
// as direnv and mise do: a configuration that can start programs or widen
// what is allowed is code, and lathe runs it only once a person has read
// and trusted the exact bytes lathe is about to use.
//
// A [Store] keeps one record per configuration file of one workspace, in a
// directory outside every workspace (by default $XDG_STATE_HOME/lathe/trust).
// A record holds the SHA-256 of the bytes that were trusted and a copy of
// them, so that a later change can be shown as a difference. Nothing in the
// workspace can vouch for itself: a record is keyed by the real path of the
// workspace and of the file, and a store that lies inside the workspace is
// refused.
//
// The package uses only the standard library (and lathe's internal
// statedir, which shares the store's checks with the grants of package
// audit), so that any face of lathe can check trust without the rest of
// the engine.
package trust

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lathe-tools/lathe/internal/statedir"
)

// Status says what a store knows of a file's bytes.
type Status int

const (
	// New: the file of this workspace was never trusted.
	New Status = iota
	// Changed: it was trusted, with other bytes than these.
	Changed
	// Trusted: these exact bytes were trusted.
	Trusted
)

func (s Status) String() string {
	switch s {
	case Trusted:
		return "trusted"
	case Changed:
		return "changed since it was trusted"
	}
	return "not trusted yet"
}

// ErrInsideWorkspace is returned when the store's directory lies inside the
// workspace whose file is checked: anything that can write the workspace
// could then write its own trust.
var ErrInsideWorkspace = errors.New("the trust store is inside the workspace")

// Record is one trusted file of one workspace.
type Record struct {
	// Workspace is the real absolute path of the workspace.
	Workspace string `json:"workspace"`
	// File is the real absolute path of the configuration file (its
	// directory resolved, its own name kept: a link named lathe.toml in the
	// workspace is trusted as that name, not as its target).
	File string `json:"file"`
	// SHA256 is the hex SHA-256 of the trusted bytes.
	SHA256 string `json:"sha256"`
	// Content is a copy of the trusted bytes, to show what changed.
	Content string `json:"content"`
	// Time is when the person trusted it.
	Time time.Time `json:"time"`
}

// Sum returns the hex SHA-256 of data, as records hold it.
func Sum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// DefaultDir returns the store's directory: $XDG_STATE_HOME/lathe/trust,
// or $HOME/.local/state/lathe/trust when XDG_STATE_HOME is unset or not
// absolute (as the XDG spec asks).
func DefaultDir() (string, error) { return statedir.Dir("trust") }

// Store is a directory of trust records. Its methods may be called from
// several processes at once: each record is its own file, replaced whole.
type Store struct {
	dir string
}

// Open returns the store in dir (created on the first [Store.Trust]).
func Open(dir string) *Store { return &Store{dir: dir} }

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Canonical returns the real absolute paths of workspace and file, as
// records are keyed: the workspace with every link resolved, and the file
// with its directory resolved and its own name kept.
func Canonical(workspace, file string) (ws, f string, err error) {
	ws, err = realPath(workspace)
	if err != nil {
		return "", "", fmt.Errorf("workspace %s: %w", workspace, err)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", "", err
	}
	dir, err := realPath(filepath.Dir(abs))
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", file, err)
	}
	return ws, filepath.Join(dir, filepath.Base(abs)), nil
}

func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// recordPath is the file holding the record of (ws, file), both canonical.
func (s *Store) recordPath(ws, file string) string {
	h := sha256.Sum256([]byte(ws + "\x00" + file))
	return filepath.Join(s.dir, hex.EncodeToString(h[:])+".json")
}

// guard refuses a store that a process confined to ws could write: one
// inside the workspace.
func (s *Store) guard(ws string) error {
	inside, err := statedir.Inside(s.dir, ws)
	if err != nil {
		return err
	}
	if inside {
		return fmt.Errorf("%w: %s is inside %s; set XDG_STATE_HOME to a directory outside it", ErrInsideWorkspace, s.dir, ws)
	}
	return nil
}

// Check says whether data, read from file, is trusted for workspace. It
// returns the record, if there is one, so that a change can be shown. A
// record that cannot be read or does not hold together is an error, never
// trust.
func (s *Store) Check(workspace, file string, data []byte) (Status, *Record, error) {
	ws, f, err := Canonical(workspace, file)
	if err != nil {
		return New, nil, err
	}
	if err := s.guard(ws); err != nil {
		return New, nil, err
	}
	r, err := s.read(ws, f)
	if err != nil || r == nil {
		return New, nil, err
	}
	if r.SHA256 == Sum(data) {
		return Trusted, r, nil
	}
	return Changed, r, nil
}

// read returns the record of (ws, f), or nil when there is none.
func (s *Store) read(ws, f string) (*Record, error) {
	p := s.recordPath(ws, f)
	if err := s.checkDir(); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r, err := decode(p, data)
	if err != nil {
		return nil, err
	}
	if r.Workspace != ws || r.File != f {
		return nil, fmt.Errorf("trust record %s is corrupt: it is for %s in %s, not %s in %s; remove it and run lathe trust again",
			p, r.File, r.Workspace, f, ws)
	}
	return r, nil
}

// decode reads one record file and checks that it holds together.
func decode(p string, data []byte) (*Record, error) {
	var r Record
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("trust record %s is corrupt: %v; remove it and run lathe trust again", p, err)
	}
	if r.SHA256 != Sum([]byte(r.Content)) || r.Workspace == "" || r.File == "" {
		return nil, fmt.Errorf("trust record %s is corrupt: its hash does not match its content; remove it and run lathe trust again", p)
	}
	return &r, nil
}

// checkDir refuses a store directory that is not the user's own or that
// others may write: another user could then trust files for this one.
func (s *Store) checkDir() error { return statedir.CheckDir(s.dir, "trust store") }

// Trust records data, read from file, as trusted for workspace. The record
// replaces any earlier one at once: it is written to a temporary file of
// mode 0600 in the store, synced, then renamed over the old one.
func (s *Store) Trust(workspace, file string, data []byte) error {
	ws, f, err := Canonical(workspace, file)
	if err != nil {
		return err
	}
	if err := s.guard(ws); err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	if err := s.checkDir(); err != nil {
		return err
	}
	r := Record{Workspace: ws, File: f, SHA256: Sum(data), Content: string(data), Time: time.Now().UTC()}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return statedir.WriteFile(s.recordPath(ws, f), append(b, '\n'))
}

// Revoke removes the record of file in workspace. It reports whether there
// was one.
func (s *Store) Revoke(workspace, file string) (bool, error) {
	ws, f, err := Canonical(workspace, file)
	if err != nil {
		return false, err
	}
	err = os.Remove(s.recordPath(ws, f))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// List returns every record of the store, sorted by workspace and file. A
// record that does not decode is an error naming its file.
func (s *Store) List() ([]Record, error) {
	if err := s.checkDir(); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	var out []Record
	var errs []error
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(s.dir, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r, err := decode(p, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Record) int {
		return strings.Compare(a.Workspace+"\x00"+a.File, b.Workspace+"\x00"+b.File)
	})
	return out, errors.Join(errs...)
}

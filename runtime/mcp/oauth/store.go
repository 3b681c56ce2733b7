package oauth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/lathe-tools/lathe/internal/statedir"
)

// Record is what lathe keeps of one server's authorization: the tokens,
// and what it needs to refresh them without asking the person again. It
// is keyed by the workspace, the server's name and its URL (the resource),
// so that a token granted for one server is never offered to another,
// even one of the same name in another workspace or at another address.
//
// A Record prints without its secrets: its String, GoString and LogValue
// say which server it is for and when it expires, never a token.
type Record struct {
	Workspace string `json:"workspace"`
	Server    string `json:"server"`
	Resource  string `json:"resource"`

	// Audience is the resource indicator (RFC 8707) the token was asked
	// for, sent again with every refresh.
	Audience string `json:"audience,omitempty"`
	// TokenURL is the authorization server's token endpoint.
	TokenURL string `json:"token_url"`
	// ClientID and ClientSecret are the client's credentials at the
	// authorization server: configured, or registered dynamically.
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	// SecretInHeader says the client authenticates with HTTP Basic
	// (client_secret_basic) rather than in the form (client_secret_post).
	SecretInHeader bool `json:"secret_in_header,omitempty"`

	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Scope        string    `json:"scope,omitempty"`
	// Saved is when the record was written.
	Saved time.Time `json:"saved"`
}

// String names the record's server and resource, without its secrets.
func (r *Record) String() string {
	if r == nil {
		return "<no record>"
	}
	s := fmt.Sprintf("token of %s (%s)", r.Server, r.Resource)
	if !r.Expiry.IsZero() {
		s += ", expires " + r.Expiry.UTC().Format(time.RFC3339)
	}
	if r.RefreshToken != "" {
		s += ", refreshable"
	}
	return s
}

// GoString is String, so that %#v prints no secret either.
func (r *Record) GoString() string { return r.String() }

// LogValue is String, so that a logger prints no secret.
func (r *Record) LogValue() slog.Value { return slog.StringValue(r.String()) }

// Store keeps [Record]s in a directory only the user can open, one file
// per record, each of mode 0600 and written at once. A record that is a
// link, that another user owns or that others may read is refused, as is
// a directory others may open: another local user must neither read a
// token nor plant one.
type Store struct {
	dir string
}

// DefaultDir is the store's place in the user's state directory:
// $XDG_STATE_HOME/lathe/oauth, by default ~/.local/state/lathe/oauth.
func DefaultDir() (string, error) { return statedir.Dir("oauth") }

// OpenStore returns the store in dir, which is made (mode 0700) at the
// first save.
func OpenStore(dir string) *Store { return &Store{dir: dir} }

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// CheckOutside refuses the store when its directory lies inside the
// workspace ws: a tool of the workspace could then read the tokens, or
// plant its own.
func (s *Store) CheckOutside(ws string) error {
	resolved, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return err
	}
	in, err := statedir.Inside(s.dir, resolved)
	if err != nil {
		return err
	}
	if in || statedir.Within(ws, s.dir) || statedir.Within(resolved, s.dir) {
		return fmt.Errorf("the OAuth token store %s lies inside the workspace %s; set XDG_STATE_HOME to a directory outside it", s.dir, ws)
	}
	return nil
}

// file is the name of the record for the key.
func (s *Store) file(workspace, server, resource string) string {
	sum := sha256.Sum256([]byte(workspace + "\x00" + server + "\x00" + resource))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:16])+".json")
}

// Load returns the record of the server named server, at resource, of the
// workspace; nil, nil when there is none.
func (s *Store) Load(workspace, server, resource string) (*Record, error) {
	if err := s.checkDir(); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	p := s.file(workspace, server, resource)
	r, err := s.read(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if r.Workspace != workspace || r.Server != server || r.Resource != resource {
		return nil, fmt.Errorf("refusing the token file %s: it is not the record of %s at %s", p, server, resource)
	}
	return r, nil
}

// Save writes r, replacing the record of the same key at once.
func (s *Store) Save(r *Record) error {
	if err := statedir.MkdirAll(s.dir, "OAuth token store"); err != nil {
		return err
	}
	if err := s.checkDir(); err != nil {
		return err
	}
	r.Saved = time.Now().UTC()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return statedir.WriteFile(s.file(r.Workspace, r.Server, r.Resource), append(b, '\n'))
}

// Delete removes the record of the key; it reports whether there was one.
func (s *Store) Delete(workspace, server, resource string) (bool, error) {
	if err := s.checkDir(); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	err := os.Remove(s.file(workspace, server, resource))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// List returns the records of the workspace, sorted by server. A file that
// cannot be read as a record is reported in the error, and the others are
// still returned.
func (s *Store) List(workspace string) ([]*Record, error) {
	if err := s.checkDir(); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	var (
		out  []*Record
		errs []error
	)
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		r, err := s.read(filepath.Join(s.dir, e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if r.Workspace == workspace {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *Record) int { return strings.Compare(a.Server+"\x00"+a.Resource, b.Server+"\x00"+b.Resource) })
	return out, errors.Join(errs...)
}

// checkDir refuses a store directory that is a link, another user's, or
// one that others may open.
func (s *Store) checkDir() error {
	fi, err := os.Lstat(s.dir)
	if err != nil {
		return err
	}
	return private(s.dir, fi, true)
}

// read reads the record file p, without following a link and without
// blocking on a FIFO, checking the file it opened.
func (s *Store) read(p string) (*Record, error) {
	f, fi, err := statedir.Open(p)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("refusing the token file %s: it is a symbolic link", p)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := private(p, fi, false); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		// The decoder's message may quote the file; the file holds secrets.
		return nil, fmt.Errorf("refusing the token file %s: it is not a record lathe wrote", p)
	}
	return &r, nil
}

// private refuses a file or directory that is not a plain one, belongs to
// another user or that others may open.
func private(p string, fi fs.FileInfo, dir bool) error {
	what, typ := "file", fs.FileMode(0)
	if dir {
		what, typ = "directory", fs.ModeDir
	}
	if fi.Mode().Type() != typ {
		return fmt.Errorf("refusing the token %s %s: it is not a plain %s", what, p, what)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("refusing the token %s %s: it belongs to user %d, not to this user (%d)", what, p, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("refusing the token %s %s: its mode %04o lets other users open it", what, p, fi.Mode().Perm())
	}
	return nil
}

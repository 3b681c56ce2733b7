package audit

import (
	"bytes"
	"context"
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
	"github.com/lathe-tools/lathe/policy"
)

// ErrGrantsInsideWorkspace is returned by [OpenGrants] when the grants'
// directory lies inside the workspace: whatever runs there could then
// write its own grants.
var ErrGrantsInsideWorkspace = errors.New("the grants directory is inside the workspace")

// DefaultGrantDir returns where grants are kept: $XDG_STATE_HOME/lathe/grants,
// or $HOME/.local/state/lathe/grants, beside the trust records.
func DefaultGrantDir() (string, error) { return statedir.Dir("grants") }

// Grants are the "always" grants people gave for one workspace, kept
// outside it: a grant lets calls run without asking, so it is a rule, and
// nothing a tool does may make one. The audit database in the workspace
// is a log, never a source of rules; grants once kept there are not read.
//
// The grants of a workspace are a directory of dir named by the SHA-256 of
// the workspace's real path, holding one record file per grant, named by
// the SHA-256 of its tool and command line. So a workspace copied or
// cloned elsewhere has none, and two processes granting at once never
// lose each other's grant. Every directory is 0700 and every record 0600,
// written whole and renamed into place; a directory that others may write,
// or that another user owns, is refused, as a record that does not name
// its own workspace, tool and command line is: an error, never a grant.
//
// A Grants is safe for concurrent use, and by several processes at once.
type Grants struct {
	dir string // the grants of every workspace
	ws  string // the workspace's real path
	sub string // the grants of ws
}

var _ policy.GrantStore = (*Grants)(nil)

// grantRecord is one grant as a file holds it.
type grantRecord struct {
	Workspace string    `json:"workspace"`
	Tool      string    `json:"tool"`
	Command   string    `json:"command,omitempty"`
	Created   time.Time `json:"created"`
}

// OpenGrants returns the grants of workspace kept in dir (see
// [DefaultGrantDir]); nothing is created before the first grant. A dir
// inside the workspace is refused with [ErrGrantsInsideWorkspace].
func OpenGrants(dir, workspace string) (*Grants, error) {
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	ws, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("audit: workspace %s: %w", workspace, err)
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	inside, err := statedir.Inside(dir, ws)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if inside {
		return nil, fmt.Errorf("audit: %w: %s is inside %s; set XDG_STATE_HOME to a directory outside it",
			ErrGrantsInsideWorkspace, dir, ws)
	}
	h := sha256.Sum256([]byte(ws))
	return &Grants{dir: dir, ws: ws, sub: filepath.Join(dir, hex.EncodeToString(h[:]))}, nil
}

// Dir returns the directory that holds this workspace's grants.
func (g *Grants) Dir() string { return g.sub }

// Workspace returns the real path of the workspace the grants are for.
func (g *Grants) Workspace() string { return g.ws }

func (g *Grants) recordPath(toolName, command string) string {
	h := sha256.Sum256([]byte(toolName + "\x00" + command))
	return filepath.Join(g.sub, hex.EncodeToString(h[:])+".json")
}

// checkDirs checks both directories; an error wrapping fs.ErrNotExist
// means no grant was ever stored for the workspace.
func (g *Grants) checkDirs() error {
	if err := statedir.CheckDir(g.dir, "grants directory"); err != nil {
		return err
	}
	return statedir.CheckDir(g.sub, "grants directory")
}

// Granted reports whether a person granted calls of the tool with this
// command line (see [policy.Grant]) for good, in this workspace.
func (g *Grants) Granted(ctx context.Context, toolName, command string) (bool, error) {
	if err := g.checkDirs(); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("audit: %w", err)
	}
	p := g.recordPath(toolName, command)
	r, err := g.read(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if r.Tool != toolName || r.Command != command {
		return false, fmt.Errorf("audit: grant %s is corrupt: it is for %s %q, not %s %q; revoke it and grant again",
			p, r.Tool, r.Command, toolName, command)
	}
	return true, nil
}

// read decodes one record and checks that it is of this workspace.
func (g *Grants) read(p string) (*grantRecord, error) {
	data, err := statedir.ReadFile(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("audit: grant %s: %w", p, err)
	}
	var r grantRecord
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("audit: grant %s is corrupt: %v; remove it and grant again", p, err)
	}
	if r.Workspace != g.ws || r.Tool == "" {
		return nil, fmt.Errorf("audit: grant %s is corrupt: it is for the workspace %s, not %s; remove it and grant again",
			p, r.Workspace, g.ws)
	}
	return &r, nil
}

// AddGrant stores a grant; granting a tool and command line twice keeps
// the first.
func (g *Grants) AddGrant(ctx context.Context, gr policy.Grant) error {
	if gr.Tool == "" {
		return errors.New("audit: a grant needs a tool")
	}
	if ok, err := g.Granted(ctx, gr.Tool, gr.Command); ok || err != nil {
		return err
	}
	if err := statedir.MkdirAll(g.dir, "grants directory"); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if err := os.Mkdir(g.sub, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("audit: %w", err)
	}
	if err := statedir.CheckDir(g.sub, "grants directory"); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	created := gr.Created
	if created.IsZero() {
		created = time.Now()
	}
	b, err := json.MarshalIndent(grantRecord{Workspace: g.ws, Tool: gr.Tool, Command: gr.Command,
		Created: created.UTC()}, "", "  ")
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if err := statedir.WriteFile(g.recordPath(gr.Tool, gr.Command), append(b, '\n')); err != nil {
		return fmt.Errorf("audit: storing the grant for %s: %w", gr.Tool, err)
	}
	return nil
}

// List returns the workspace's grants by tool and command line. A record
// that does not hold together is an error naming its file; the others are
// returned beside it.
func (g *Grants) List(ctx context.Context) ([]policy.Grant, error) {
	if err := g.checkDirs(); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("audit: %w", err)
	}
	ents, err := os.ReadDir(g.sub)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	var out []policy.Grant
	var errs []error
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(g.sub, e.Name())
		r, err := g.read(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if p != g.recordPath(r.Tool, r.Command) {
			errs = append(errs, fmt.Errorf("audit: grant %s is corrupt: its name is not that of %s %q; remove it and grant again",
				p, r.Tool, r.Command))
			continue
		}
		out = append(out, policy.Grant{Tool: r.Tool, Command: r.Command, Created: r.Created})
	}
	slices.SortFunc(out, func(a, b policy.Grant) int {
		return strings.Compare(a.Tool+"\x00"+a.Command, b.Tool+"\x00"+b.Command)
	})
	return out, errors.Join(errs...)
}

// Revoke removes the grants of a tool, every command line's; it reports
// whether there was one.
func (g *Grants) Revoke(ctx context.Context, toolName string) (bool, error) {
	gs, err := g.List(ctx)
	if err != nil && len(gs) == 0 {
		return false, err
	}
	found := false
	for _, gr := range gs {
		if gr.Tool != toolName {
			continue
		}
		if err := os.Remove(g.recordPath(gr.Tool, gr.Command)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return found, fmt.Errorf("audit: %w", err)
		}
		found = true
	}
	return found, nil
}

// RevokeCommand removes the grant of toolName for the command line
// command, or, when command is "", every grant of the tool, as [Grants.Revoke]
// does; it reports whether there was one.
func (g *Grants) RevokeCommand(ctx context.Context, toolName, command string) (bool, error) {
	if command == "" {
		return g.Revoke(ctx, toolName)
	}
	if err := g.checkDirs(); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("audit: %w", err)
	}
	err := os.Remove(g.recordPath(toolName, command))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("audit: %w", err)
	}
	return true, nil
}

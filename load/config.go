package load

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/trust"
)

// trustStore returns the store of the user's trust records.
func trustStore() (*trust.Store, error) {
	dir, err := trust.DefaultDir()
	if err != nil {
		return nil, err
	}
	return trust.Open(dir), nil
}

// readConfig finds the workspace and reads its configuration, applying of
// each workspace file what its trust allows (see config.Decide). Each file
// is read once: the bytes checked are the bytes used, and the bytes a
// person is shown are the bytes recorded as trusted.
func readConfig(ctx context.Context, opts *Options) (*Workspace, []config.Pending, error) {
	ws, err := opts.dir()
	if err != nil {
		return nil, nil, err
	}
	srcs, err := config.ReadSources(ws, opts.Config)
	if err != nil {
		return nil, nil, &ConfigError{err}
	}
	store, storeErr := trustStore()
	status := map[*config.Source]trust.Status{}
	records := map[*config.Source]*trust.Record{}
	check := func(s *config.Source) (bool, error) {
		if storeErr != nil {
			return false, storeErr
		}
		st, rec, err := store.Check(ws, s.Name, s.Data)
		status[s], records[s] = st, rec
		return st == trust.Trusted, err
	}
	cfg, pending, err := config.Decide(srcs, check)
	if err != nil {
		return nil, nil, &TrustError{Err: err}
	}
	untrusted := func() []Untrusted {
		var out []Untrusted
		for _, p := range pending {
			u := Untrusted{File: p.Source.Name, Status: status[p.Source], Widenings: p.Widenings}
			if r := records[p.Source]; r != nil {
				u.Diff = trust.Diff(r.Content, string(p.Source.Data))
			}
			out = append(out, u)
		}
		return out
	}
	if len(pending) > 0 && opts.Trust != nil {
		asked := false
		for i, u := range untrusted() {
			ok, err := opts.Trust(ctx, u)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				if err := store.Trust(ws, u.File, pending[i].Source.Data); err != nil {
					return nil, nil, &TrustError{Err: err}
				}
				asked = true
			}
		}
		if asked {
			if cfg, pending, err = config.Decide(srcs, check); err != nil {
				return nil, nil, &TrustError{Err: err}
			}
		}
	}
	w := &Workspace{Dir: ws, Config: cfg, Untrusted: untrusted()}
	if len(pending) > 0 && opts.RequireTrust {
		var sb strings.Builder
		for _, u := range w.Untrusted {
			fmt.Fprintf(&sb, "%s is %s, and it would:\n", trust.Visible(u.File), u.Status)
			for _, x := range u.Widenings {
				fmt.Fprintf(&sb, "  %s\n", trust.Visible(x.String()))
			}
		}
		return nil, nil, &TrustError{Untrusted: w.Untrusted,
			Err: errors.New("the workspace configuration needs trust: " + strings.TrimSuffix(sb.String(), "\n"))}
	}
	return w, pending, nil
}

// leftOut reports whether the [tools.NAME] table of name comes from a file
// whose tools were left out for want of trust: the tool it names may be one
// of those, so that its name being unknown is no typo.
func leftOut(cfg *config.Config, pending []config.Pending) func(name string) bool {
	return func(name string) bool {
		t := cfg.Tools[name]
		return t != nil && slices.ContainsFunc(pending, func(p config.Pending) bool { return p.Source.Name == t.Pos.File })
	}
}

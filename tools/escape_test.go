package tools_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

// TestEscapes tries every way out of the workspace with every tool that
// takes a path: each is denied, and nothing inside or outside changes.
func TestEscapes(t *testing.T) {
	ws, outside := escapeFixture(t)
	e := newEngine(t, ws, tools.Options{})
	base := filepath.Dir(ws)
	beforeAll := snapshot(t, base)

	paths := []string{
		"..",
		"../outside/secret.txt",
		"sub/../../outside/secret.txt",
		"../outside/new.txt",
		filepath.Join(outside, "secret.txt"),
		filepath.Join(outside, "new.txt"),
		"/etc/passwd",
		"out_file",             // link to a file outside
		"out_abs",              // absolute link to a file outside
		"out_dir",              // link to a directory outside
		"out_dir/secret.txt",   // through it
		"out_dir/new.txt",      // a new file through it
		"out_dir/deep/new.txt", // new directories through it
		"in_out",               // link to a link that points out
		"out_chain",            // a chain of links that ends outside
		"sub/up/outside/secret.txt",
		"dangling",     // a link to nothing: writing would create its target
		"dangle_chain", // a chain that ends in one
	}
	calls := []struct {
		name string
		args func(p string) map[string]any
	}{
		{"read_file", func(p string) map[string]any { return map[string]any{"path": p} }},
		{"write_file", func(p string) map[string]any { return map[string]any{"path": p, "content": "pwned"} }},
		{"edit_file", func(p string) map[string]any {
			return map[string]any{"path": p, "old_string": "OUTSIDE", "new_string": "pwned"}
		}},
		{"list_dir", func(p string) map[string]any { return map[string]any{"path": p} }},
		{"grep", func(p string) map[string]any { return map[string]any{"pattern": "OUTSIDE", "path": p} }},
	}
	for _, c := range calls {
		for _, p := range paths {
			text := fail(t, e, c.name, c.args(p), tool.KindDenied)
			if !strings.Contains(text, "outside the workspace") && !strings.Contains(text, "dangling symbolic link") {
				t.Errorf("%s %q: unclear denial: %s", c.name, p, text)
			}
			if strings.Contains(text, "OUTSIDE") {
				t.Errorf("%s %q: the denial shows outside content: %s", c.name, p, text)
			}
		}
	}
	sameSnapshot(t, beforeAll, snapshot(t, base))

	// The denial is visible to Go callers as tool.ErrDenied.
	out := e.Call(t.Context(), &tool.Call{Name: "read_file", Arguments: []byte(`{"path":"out_file"}`)})
	if err := out.Err(); err == nil || tool.KindOf(err) != tool.KindDenied {
		t.Errorf("Outcome.Err() = %v, want a denial", err)
	}
}

// TestSearchesStayInside checks that glob and grep, which walk the tree,
// never follow a link out of it, nor list one that leads out or nowhere.
func TestSearchesStayInside(t *testing.T) {
	ws, _ := escapeFixture(t)
	e := newEngine(t, ws, tools.Options{})

	for _, pattern := range []string{"**", "**/*", "*", "**/*.txt", "out_dir/*", "out_dir/**", "sub/up/**", "sub/up/outside/*"} {
		got := ok(t, e, "glob", map[string]any{"pattern": pattern})
		if strings.HasPrefix(got, "[no paths match") {
			continue
		}
		for _, bad := range []string{"secret", "out_file", "out_abs", "out_dir", "in_out", "out_chain", "dangl", "loop", "sub/up"} {
			if strings.Contains(got, bad) {
				t.Errorf("glob %q lists %q:\n%s", pattern, bad, got)
			}
		}
	}
	// Links that stay inside are listed, by their own names.
	if got := ok(t, e, "glob", map[string]any{"pattern": "in_*"}); got != "in_chain\nin_dir\nin_file" {
		t.Errorf("glob in_*:\n%s", got)
	}

	for _, args := range []map[string]any{
		{"pattern": "OUTSIDE"},
		{"pattern": "OUTSIDE", "path": "sub"},
		{"pattern": "OUTSIDE", "glob": "**/*.txt"},
	} {
		got := ok(t, e, "grep", args)
		if strings.Contains(got, ":1:OUTSIDE") {
			t.Errorf("grep %v searched outside:\n%s", args, got)
		}
	}
	// Each file is searched once, where it is, not again through links.
	if got := ok(t, e, "grep", map[string]any{"pattern": "alpha"}); got != "a.txt:1:alpha" {
		t.Errorf("grep alpha:\n%s", got)
	}
}

// Links that stay inside the workspace work like the paths they lead to.
func TestLinksInside(t *testing.T) {
	ws, _ := escapeFixture(t)
	e := newEngine(t, ws, tools.Options{})
	if got := ok(t, e, "read_file", map[string]any{"path": "in_chain"}); got != "alpha\n" {
		t.Errorf("read through a chain of links: %q", got)
	}
	contains(t, ok(t, e, "edit_file", map[string]any{"path": "in_dir/b.txt", "old_string": "beta", "new_string": "BETA"}),
		`edited "sub/b.txt"`)
	contains(t, ok(t, e, "write_file", map[string]any{"path": "in_dir/new.txt", "content": "n"}), `created "sub/new.txt"`)
	if got := ok(t, e, "list_dir", map[string]any{"path": "in_dir"}); got != "b.txt\nnew.txt\nup -> ../.." {
		t.Errorf("list through a link: %q", got)
	}
	if got := ok(t, e, "grep", map[string]any{"pattern": "BETA", "path": "in_dir"}); got != "sub/b.txt:1:BETA" {
		t.Errorf("grep through a link: %q", got)
	}
}

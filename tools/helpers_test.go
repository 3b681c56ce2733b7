package tools_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

// newEngine registers the standard tools, confined to dir, on a fresh engine.
func newEngine(t *testing.T, dir string, opts tools.Options) *lathe.Engine {
	t.Helper()
	e := lathe.New(lathe.Options{})
	t.Cleanup(func() { e.Close() })
	opts.Describe = e.Lookup
	ts, err := tools.Standard(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Register(ts...); err != nil {
		t.Fatal(err)
	}
	return e
}

// call runs one call and returns its result.
func call(t *testing.T, e *lathe.Engine, name string, args any) *tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	out := e.Call(context.Background(), &tool.Call{Name: name, Arguments: raw})
	if out.Result == nil {
		t.Fatalf("%s %s: no result: %+v", name, raw, out)
	}
	return out.Result
}

// ok runs a call that must succeed and returns its text.
func ok(t *testing.T, e *lathe.Engine, name string, args any) string {
	t.Helper()
	r := call(t, e, name, args)
	if r.IsError {
		t.Fatalf("%s %v: unexpected error (%s): %s", name, args, r.ErrorKind, r.Text())
	}
	return r.Text()
}

// fail runs a call that must fail with kind and returns its text.
func fail(t *testing.T, e *lathe.Engine, name string, args any, kind tool.ErrorKind) string {
	t.Helper()
	r := call(t, e, name, args)
	if !r.IsError {
		t.Fatalf("%s %v: succeeded, want a %s error; got:\n%s", name, args, kind, r.Text())
	}
	if r.ErrorKind != kind {
		t.Fatalf("%s %v: error kind %s, want %s: %s", name, args, r.ErrorKind, kind, r.Text())
	}
	return r.Text()
}

// contains fails the test unless text contains every one of wants.
func contains(t *testing.T, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("text does not contain %q:\n%s", w, text)
		}
	}
}

// writeFiles creates files under dir from a map of slash paths to contents.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// snapshot records every entry under dir: its type, mode, link target and
// content, so that a test can tell that nothing changed.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			v += " -> " + target
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		m[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameSnapshot(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s changed: was %q, now %q", p, v, after[p])
		}
	}
	for p, v := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s appeared: %q", p, v)
		}
	}
}

// tempFiles lists leftover temporary files of atomic writes under dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	var left []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".lathe-") {
			left = append(left, p)
		}
		return nil
	})
	return left
}

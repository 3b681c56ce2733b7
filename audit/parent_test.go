package audit_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// TestNestedCallNamesItsParent: a call a running tool makes through the
// engine with the context it was given is recorded with the caller's
// record as its parent; calls made from outside have none.
func TestNestedCallNamesItsParent(t *testing.T) {
	s, err := audit.Open(filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, _ := audit.NewRedactor(nil, nil)
	e := lathe.New(lathe.Options{Outer: []lathe.Middleware{audit.Middleware(s, r)}})
	defer e.Close()
	type in struct{}
	leaf := builtin.Must(builtin.Func(tool.Definition{Name: "leaf"}, func(ctx context.Context, _ in) (string, error) {
		return "leaf", nil
	}))
	outer := builtin.Must(builtin.Func(tool.Definition{Name: "outer"}, func(ctx context.Context, _ in) (string, error) {
		return e.Call(ctx, &tool.Call{Name: "leaf", Arguments: json.RawMessage(`{}`)}).Result.Text(), nil
	}))
	if err := e.Register(leaf, outer); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{"outer", "leaf"} {
		if out := e.Call(ctx, &tool.Call{Name: name, Arguments: json.RawMessage(`{}`)}); out.Result.IsError {
			t.Fatal(out.Result.Text())
		}
	}
	recs, err := s.List(ctx, audit.Filter{})
	if err != nil || len(recs) != 3 {
		t.Fatalf("List = %+v, %v; want 3 records", recs, err)
	}
	// The outer call starts first, its leaf second, the direct leaf last.
	if recs[0].Tool != "outer" || recs[0].Parent != 0 {
		t.Errorf("outer = %+v, want no parent", recs[0])
	}
	if recs[1].Tool != "leaf" || recs[1].Parent != recs[0].ID {
		t.Errorf("nested leaf = %+v, want parent %d", recs[1], recs[0].ID)
	}
	if recs[2].Tool != "leaf" || recs[2].Parent != 0 {
		t.Errorf("direct leaf = %+v, want no parent", recs[2])
	}
}

package lathe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lathe-tools/lathe/schema"
	"github.com/lathe-tools/lathe/tool"
)

// TestRegistrySnapshotsDoNotChange: a call reads a snapshot of the registry
// without a lock, so an edit must never write to a map that an older
// snapshot holds, whichever shard it touches.
func TestRegistrySnapshotsDoNotChange(t *testing.T) {
	var snaps []*registry
	r := &registry{}
	for i := range 2000 {
		snaps = append(snaps, r)
		r = putNamed(r, fmt.Sprintf("t%04d", i))
	}
	for i, s := range snaps {
		if s.len() != i {
			t.Fatalf("snapshot %d says it holds %d tools", i, s.len())
		}
		n := 0
		for name := range s.all() {
			if _, ok := s.get(name); !ok {
				t.Fatalf("snapshot %d yields %q but does not find it", i, name)
			}
			n++
		}
		if n != i {
			t.Fatalf("snapshot %d holds %d tools, want %d: a later edit wrote into it", i, n, i)
		}
	}
	ed := r.edit()
	for i := range 1000 {
		ed.remove(fmt.Sprintf("t%04d", i))
	}
	ed.remove("never-registered")
	after := ed.done()
	if after.len() != 1000 || r.len() != 2000 {
		t.Fatalf("after removing 1000 of 2000: %d left, and the old snapshot holds %d", after.len(), r.len())
	}
	if _, ok := after.get("t0999"); ok {
		t.Error("a removed tool is still found")
	}
	if _, ok := r.get("t0999"); !ok {
		t.Error("removing from an edit removed from the snapshot it began with")
	}
}

func putNamed(r *registry, name string) *registry {
	ed := r.edit()
	en := &entry{}
	en.tool.Definition.Name = name
	ed.put(en)
	return ed.done()
}

// TestFirstCallSchemaFailure: should a schema registration checked fail to
// compile at the tool's first call, the call is a runtime failure that says
// so, and the tool does not run.
func TestFirstCallSchemaFailure(t *testing.T) {
	var runs atomic.Int32
	e := New(Options{})
	defer e.Close()
	err := e.Register(tool.Tool{Definition: tool.Definition{Name: "t"},
		Runtime: tool.RuntimeFunc(func(context.Context, *tool.Definition, *tool.Call) (*tool.Outcome, error) {
			runs.Add(1)
			return &tool.Outcome{Result: tool.TextResult("ran")}, nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	for _, which := range []string{"input", "output"} {
		en, _ := e.tools.Load().get("t")
		// A zero Schema, which no constructor returns, has no JSON to
		// compile: it stands for a prepared schema whose compilation fails.
		if which == "input" {
			en.input = &schema.Schema{}
		} else {
			en.input, en.output = schema.MustCompile(nil), &schema.Schema{}
		}
		out := e.Call(context.Background(), &tool.Call{Name: "t", Arguments: json.RawMessage(`{}`)})
		var te *tool.Error
		if !errors.As(out.Err(), &te) || te.Kind != tool.KindRuntimeFailure || te.Stage != "decode" ||
			!strings.Contains(te.Error(), "the tool's "+which+" schema does not compile: schema: ") {
			t.Errorf("%s: err = %v, want a runtime failure naming the %s schema", which, out.Err(), which)
		}
	}
	if runs.Load() != 0 {
		t.Errorf("the tool ran %d times with a schema that does not compile", runs.Load())
	}
}

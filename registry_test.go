package lathe

import (
	"fmt"
	"testing"
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

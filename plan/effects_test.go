package plan

import (
	"encoding/json"
	"testing"
)

func pathRes(key string) Resource { return Resource{Kind: KindPath, Key: key} }

func read(r Resource) Use  { return Use{Resource: r, Access: Read} }
func write(r Resource) Use { return Use{Resource: r, Access: Write} }

func uses(us ...Use) Effects { return Effects{Uses: us} }

func TestOverlaps(t *testing.T) {
	branch := func(k string) Resource { return Resource{Kind: "branch", Key: k} }
	tests := []struct {
		a, b Resource
		want bool
	}{
		{pathRes("a.txt"), pathRes("a.txt"), true},
		{pathRes("a.txt"), pathRes("b.txt"), false},
		{pathRes("src"), pathRes("src/main.go"), true},        // parent and child
		{pathRes("src/main.go"), pathRes("src"), true},        // child and parent
		{pathRes("src"), pathRes("src/pkg/deep/x.go"), true},  // any depth
		{pathRes("src/a"), pathRes("src/ab"), false},          // a prefix of the name is not a parent
		{pathRes("src/a/x"), pathRes("src/b/x"), false},       // siblings
		{pathRes(""), pathRes("anything/at/all"), true},       // the root covers every path
		{Resource{}, pathRes("a"), true},                      // everything covers every kind
		{Resource{}, branch("main"), true},                    // …
		{pathRes("main"), branch("main"), false},              // kinds never meet
		{branch("main"), branch("main"), true},                // other kinds: equal keys
		{branch("main"), branch("main/x"), false},             // …compared exactly, not as paths
		{branch(""), branch("dev"), true},                     // every branch
		{Resource{Kind: "url", Key: "a"}, pathRes(""), false}, // the root of paths is not everything
	}
	for _, tt := range tests {
		if got := tt.a.Overlaps(tt.b); got != tt.want {
			t.Errorf("%v overlaps %v = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := tt.b.Overlaps(tt.a); got != tt.want {
			t.Errorf("%v overlaps %v = %v, want %v (not symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}

// TestConflicts has one case per rule of docs/design/batch.md.
func TestConflicts(t *testing.T) {
	tests := []struct {
		name string
		a, b Effects
		want bool
	}{
		{"two writes of one file", uses(write(pathRes("a"))), uses(write(pathRes("a"))), true},
		{"a write and a read of one file", uses(write(pathRes("a"))), uses(read(pathRes("a"))), true},
		{"a read and a write of one file", uses(read(pathRes("a"))), uses(write(pathRes("a"))), true},
		{"two reads of one file", uses(read(pathRes("a"))), uses(read(pathRes("a"))), false},
		{"writes of different files", uses(write(pathRes("a"))), uses(write(pathRes("b"))), false},
		{"a write and a read of different files", uses(write(pathRes("a"))), uses(read(pathRes("b"))), false},
		{"a write of a directory and a read beneath it", uses(write(pathRes("d"))), uses(read(pathRes("d/f"))), true},
		{"a write beneath a directory and a read of it", uses(write(pathRes("d/f"))), uses(read(pathRes("d"))), true},
		{"a write and a read of everything", uses(write(pathRes("a"))), uses(read(Resource{})), true},
		{"reads of everything and of a file", uses(read(Resource{})), uses(read(pathRes("a"))), false},
		{"a write and a read of every path", uses(write(pathRes("a"))), uses(read(pathRes(""))), true},
		{"exclusive and a read", Effects{Exclusive: true}, uses(read(pathRes("a"))), true},
		{"exclusive and a call that touches nothing", Effects{Exclusive: true}, Effects{}, true},
		{"two exclusive calls", Effects{Exclusive: true}, Effects{Exclusive: true}, true},
		{"a call that touches nothing and a write of everything", Effects{}, uses(write(Resource{})), false},
		{"several uses, one in conflict", uses(read(pathRes("a")), write(pathRes("b"))), uses(read(pathRes("b"))), true},
		{"several uses, none in conflict", uses(read(pathRes("a")), write(pathRes("b"))), uses(read(pathRes("a")), read(pathRes("c"))), false},
	}
	for _, tt := range tests {
		if got := tt.a.Conflicts(&tt.b); got != tt.want {
			t.Errorf("%s: conflicts = %v, want %v", tt.name, got, tt.want)
		}
		if got := tt.b.Conflicts(&tt.a); got != tt.want {
			t.Errorf("%s (swapped): conflicts = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPathKey(t *testing.T) {
	tests := map[string]string{
		"a.txt":         "a.txt",
		"./a.txt":       "a.txt",
		"src//pkg/":     "src/pkg",
		"src/../a.txt":  "a.txt",
		"src/./x/../y":  "src/y",
		".":             "",
		"":              "",
		"..":            "", // outside: counts as every path
		"../other/file": "",
		"a/../../b":     "",
		"/etc/passwd":   "", // absolute: the planner cannot place it
	}
	for in, want := range tests {
		if foldCase {
			continue
		}
		if got := PathKey(in); got != want {
			t.Errorf("PathKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAccessJSON(t *testing.T) {
	b, err := json.Marshal(uses(read(pathRes("a")), write(Resource{Kind: "branch"})))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"uses":[{"kind":"path","key":"a","access":"read"},{"kind":"branch","access":"write"}]}`
	if string(b) != want {
		t.Errorf("json = %s, want %s", b, want)
	}
	var e Effects
	if err := json.Unmarshal(b, &e); err != nil || !e.Conflicts(&Effects{Uses: []Use{read(Resource{Kind: "branch", Key: "x"})}}) {
		t.Errorf("round trip: %+v, %v", e, err)
	}
	if _, err := json.Marshal(Use{}); err == nil {
		t.Error("a use without an access marshals")
	}
}

func TestEffectsString(t *testing.T) {
	for e, want := range map[*Effects]string{
		{Exclusive: true}: "runs alone",
		{}:                "touches nothing shared",
		{Uses: []Use{read(pathRes("a")), write(pathRes("")), read(Resource{})}}: "reads path a, writes every path, reads everything",
	} {
		if got := e.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}

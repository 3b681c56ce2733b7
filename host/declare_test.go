package host_test

import (
	"testing"

	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
)

func TestCompare(t *testing.T) {
	declared := host.Declared(&protocol.Permissions{
		Read:  []string{"src/**", "src/*.go", "**", "docs"},
		Write: []string{"out/", "src/gen"},
		Net:   []string{"api.example.com:443", "*.example.com", "other.example.com:443"},
		Env:   []string{"LANG", "TOKEN"},
		Run:   []string{"git", "/usr/bin/git"},
	})
	granted := host.Permissions{Read: []string{"src"}, Write: []string{"out", "docs/x"},
		Net: []string{"api.example.com"}, Env: []string{"LANG"}, Run: []string{"git"}}
	want := map[string]bool{
		"read src/**": true, "read src/*.go": true, "read **": false, "read docs": false,
		"write out/": true, "write src/gen": false,
		"net api.example.com:443": true, "net *.example.com": false, "net other.example.com:443": false,
		"env LANG": true, "env TOKEN": false,
		"run git": true, "run /usr/bin/git": false,
	}
	got := host.Compare(declared, granted)
	if len(got) != len(want) {
		t.Fatalf("Compare = %+v", got)
	}
	for _, n := range got {
		if w, ok := want[n.Key+" "+n.Entry]; !ok || w != n.Granted {
			t.Errorf("%s %s: granted %v, want %v", n.Key, n.Entry, n.Granted, w)
		}
	}
	if len(host.Declared(nil).Read) != 0 {
		t.Error("Declared(nil) declares something")
	}
}

package server_test

import (
	"slices"
	"testing"

	"github.com/lathe-tools/lathe/server"
)

// TestProtocolVersionsIsACopy is the attack of a package that a program
// imports and that makes every server of the program claim a protocol
// version lathe does not speak: it rewrites the versions it is given. A
// client must still be answered with a version lathe speaks.
func TestProtocolVersionsIsACopy(t *testing.T) {
	want := server.ProtocolVersions()
	got := server.ProtocolVersions()
	for i := range got {
		got[i] = "1999-01-01"
	}
	if again := server.ProtocolVersions(); !slices.Equal(again, want) {
		t.Fatalf("after changing its result, ProtocolVersions() = %q, want %q", again, want)
	}
	srv := server.New(newEngine(t, testTools()...), server.Options{})
	cs := connect(t, srv, nil)
	if v := cs.InitializeResult().ProtocolVersion; !slices.Contains(want, v) {
		t.Fatalf("the server answered with protocol version %q, want one of %q", v, want)
	}
}

package tool_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/tool"
)

// TestKindsIsACopy is the attack of a package that a program imports and
// that rewrites the error kinds it is given, so that a kind another package
// checks against the list passes for another one, or a made-up kind for a
// known one.
func TestKindsIsACopy(t *testing.T) {
	want := tool.Kinds()
	if len(want) != 7 || !slices.Contains(want, tool.KindDenied) || !slices.Contains(want, tool.KindToolError) {
		t.Fatalf("Kinds() = %q, want the seven kinds", want)
	}
	got := tool.Kinds()
	for i := range got {
		got[i] = "made_up"
	}
	if again := tool.Kinds(); !slices.Equal(again, want) {
		t.Fatalf("after changing its result, Kinds() = %q, want %q", again, want)
	}
}

// TestValidName checks ValidName against the pattern it documents, on names
// a model provider refuses and on names at the edges of the length limit.
func TestValidName(t *testing.T) {
	re := regexp.MustCompile(tool.NamePattern)
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"read_file", true},
		{"fs__read-file", true},
		{"a" + strings.Repeat("b", 63), true},
		{"a" + strings.Repeat("b", 64), false},
		{"", false},
		{"1tool", false},
		{"fs.read", false},
		{"fs/read", false},
		{"read file", false},
		{"read_file\n", false},
		{"réad", false},
	} {
		if got := tool.ValidName(c.name); got != c.ok {
			t.Errorf("ValidName(%q) = %v, want %v", c.name, got, c.ok)
		}
		if got := re.MatchString(c.name); got != c.ok {
			t.Errorf("NamePattern matches %q: %v, want %v", c.name, got, c.ok)
		}
	}
}

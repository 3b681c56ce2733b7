package protect_test

import (
	"slices"
	"testing"

	"github.com/lathe-tools/lathe/protect"
)

func TestIs(t *testing.T) {
	for _, rel := range []string{
		"lathe.toml", "LATHE.TOML", "Lathe.Toml", ".lathe", ".LATHE", ".lathe/lathe.db", ".lathe/grants/x",
		"lathe.toml/x", // a directory of that name is no better than the file
	} {
		if !protect.Is(rel) {
			t.Errorf("Is(%q) = false, want true", rel)
		}
	}
	for _, rel := range []string{
		".", "", "a/lathe.toml", "sub/.lathe/x", "lathe.toml.bak", ".lathe-x", "x.lathe", ".lathe.toml.lathe-01.tmp",
	} {
		if protect.Is(rel) {
			t.Errorf("Is(%q) = true, want false", rel)
		}
	}
	if !protect.IsState(".Lathe/db") || protect.IsState("lathe.toml") {
		t.Error("IsState: wrong answer for .Lathe/db or lathe.toml")
	}
}

// Names hands out a copy: changing it changes nothing for the next caller.
func TestNamesIsACopy(t *testing.T) {
	n := protect.Names()
	n[0] = "x"
	if !slices.Contains(protect.Names(), protect.ConfigFile) || !protect.Is(protect.ConfigFile) {
		t.Error("a caller changed the protected list")
	}
}

func TestUserDirs(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	t.Setenv("XDG_CONFIG_HOME", "/cfg")
	t.Setenv("XDG_STATE_HOME", "relative") // not absolute: the default applies
	t.Setenv("XDG_DATA_HOME", "")
	want := []string{"/cfg/lathe", "/home/u/.local/state/lathe", "/home/u/.local/share/lathe"}
	if got := protect.UserDirs(); !slices.Equal(got, want) {
		t.Errorf("UserDirs() = %q, want %q", got, want)
	}
	t.Setenv("HOME", "")
	if got := protect.UserDirs(); !slices.Equal(got, []string{"/cfg/lathe"}) {
		t.Errorf("UserDirs() without HOME = %q", got)
	}
}

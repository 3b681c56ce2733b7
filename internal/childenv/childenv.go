// Package childenv is lathe's one rule for the environment of the processes
// it starts: process tools, run_command and upstream MCP servers alike.
//
// A child gets a few harmless variables of lathe's own environment (see
// [Base]), the names its configuration lists, and the variables its
// configuration sets; nothing else passes. A token in the shell that started
// lathe therefore reaches only the children configured to receive it.
package childenv

import (
	"maps"
	"os"
	"slices"
	"strings"
)

// base names the variables every child receives from lathe's environment.
// They locate programs, the user's home and temporary directory, and say how
// to print text: none of them is a secret. A sandbox replaces HOME and
// TMPDIR, since the host's are not inside it.
var base = []string{"PATH", "HOME", "LANG", "TERM", "TMPDIR"}

// Base returns the names every child receives from lathe's environment:
// PATH, HOME, LANG, TERM and TMPDIR.
func Base() []string { return slices.Clone(base) }

// Build returns the environment of a child: each name of [Base] and then of
// pass that is set in lathe's environment, with its value there, then each
// variable of set, in the order of its names, replacing a passed one of the
// same name. Nothing else of lathe's environment passes.
func Build(pass []string, set map[string]string) []string {
	env := make([]string, 0, len(base)+len(pass)+len(set))
	seen := map[string]bool{}
	for _, n := range slices.Concat(base, pass) {
		if seen[n] || hasKey(set, n) {
			continue
		}
		seen[n] = true
		if v, ok := os.LookupEnv(n); ok {
			env = append(env, n+"="+v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		env = append(env, k+"="+set[k])
	}
	return env
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// Filter returns the variables of env whose names are in [Base] or allow,
// in their order. A variable given twice keeps its last value, as exec does.
func Filter(env []string, allow []string) []string {
	ok := map[string]bool{}
	for _, n := range slices.Concat(base, allow) {
		ok[n] = true
	}
	var out []string
	for _, kv := range env {
		if k, _, found := strings.Cut(kv, "="); found && ok[k] {
			out = append(out, kv)
		}
	}
	return out
}

// Set returns env with the variable name set to value, replacing every
// earlier setting of it.
func Set(env []string, name, value string) []string {
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == name
	})
	return append(out, name+"="+value)
}

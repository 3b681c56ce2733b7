// Package mcptest finds the reference MCP servers that the tests run
// against: @modelcontextprotocol/server-everything and server-filesystem,
// which .ci/run installs with npm under .ci/node.
//
// A test that needs one calls [Everything] or [Filesystem]; without the
// servers (or without node) the test is skipped with a message that says how
// to install them, except under CI (CI set in the environment), where a
// missing server is a failure: CI must run these tests, not skip them.
//
// It also holds the small servers a test binary becomes when it re-runs
// itself as an upstream MCP server ([ServeEnv], [ServeConformance]), and
// the server whose tools are those of the runtime conformance suite
// ([Conformance]), which a test may also run in its own process.
package mcptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// EnvDir names the variable that overrides where the servers are looked
// for: a node_modules directory.
const EnvDir = "LATHE_MCP_NODE_MODULES"

// NodeModules returns the node_modules directory holding the servers, or ""
// when there is none.
func NodeModules() string {
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		nm := filepath.Join(dir, ".ci", "node", "node_modules")
		if fi, err := os.Stat(nm); err == nil && fi.IsDir() {
			return nm
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Script returns the path of a server's entry point under node_modules,
// such as "@modelcontextprotocol/server-everything/dist/index.js", and the
// node binary to run it with; "" for both when either is missing.
func Script(rel string) (node, script string) {
	nm := NodeModules()
	if nm == "" {
		return "", ""
	}
	p := filepath.Join(nm, filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		return "", ""
	}
	n, err := exec.LookPath("node")
	if err != nil {
		return "", ""
	}
	return n, p
}

// Installed reports whether node and both servers are there.
func Installed() bool {
	_, a := Script(everything)
	_, b := Script(filesystem)
	return a != "" && b != ""
}

const (
	everything = "@modelcontextprotocol/server-everything/dist/index.js"
	filesystem = "@modelcontextprotocol/server-filesystem/dist/index.js"
)

func need(t testing.TB, rel string) (string, string) {
	t.Helper()
	node, script := Script(rel)
	if script == "" {
		msg := rel + " is not installed (or node is missing): run .ci/run, or " +
			"npm install --prefix .ci/node as it does, or set " + EnvDir
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node, script
}

// Everything returns the command that runs server-everything over stdio.
func Everything(t testing.TB) []string {
	node, script := need(t, everything)
	return []string{node, script, "stdio"}
}

// EverythingHTTP returns the command that runs server-everything over
// streamable HTTP; it listens on the port in $PORT, at /mcp.
func EverythingHTTP(t testing.TB) []string {
	node, script := need(t, everything)
	return []string{node, script, "streamableHttp"}
}

// Filesystem returns the command that runs server-filesystem over stdio,
// confined to dirs.
func Filesystem(t testing.TB, dirs ...string) []string {
	node, script := need(t, filesystem)
	return append([]string{node, script}, dirs...)
}

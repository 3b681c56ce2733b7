package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/tool"
)

// describeHost prints what a confined tool may reach through lathe's host
// API, as its [tools.NAME] table grants it, and what the tool declares it
// needs, each entry with whether the table grants it: a declaration is
// shown to the person, never granted by itself. It prints nothing for a
// tool that neither runs confined nor declares anything.
func describeHost(w io.Writer, cfg *config.Config, d tool.Definition, declared host.Permissions, hasDeclared bool) {
	if d.Runtime != "vfs" && d.Runtime != "wasm" && !hasDeclared {
		return
	}
	var granted host.Permissions
	table := "[tools." + d.Name + "]"
	if t := cfg.Tools[d.Name]; t != nil {
		p := t.Permissions()
		granted = host.Permissions{Read: p.Read, Write: p.Write, Net: p.Net, Env: p.Env, Run: p.Run}
		if t.Pos.File != "" {
			table += " (" + t.Pos.String() + ")"
		}
	}
	fmt.Fprintf(w, "\nHost API, granted by %s:\n", table)
	any := false
	for _, k := range []struct {
		key     string
		entries []string
	}{{"read", granted.Read}, {"write", granted.Write}, {"net", granted.Net}, {"env", granted.Env}, {"run", granted.Run}} {
		if len(k.entries) > 0 {
			fmt.Fprintf(w, "  %-6s %s\n", k.key, strings.Join(k.entries, ", "))
			any = true
		}
	}
	if !any {
		fmt.Fprintln(w, "  nothing: every file, fetch, program and variable the tool asks for is denied")
	}
	for _, n := range host.Compare(declared, granted) {
		verdict := "granted"
		if !n.Granted {
			verdict = fmt.Sprintf("not granted: a person may add %q to %s in [tools.%s]", n.Entry, n.Key, d.Name)
		}
		fmt.Fprintf(w, "declares: %s %s (%s)\n", n.Key, n.Entry, verdict)
	}
}

package cli

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/internal/statedir"
	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/sandbox"
	"github.com/lathe-tools/lathe/trust"
)

func newConfigCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the configuration as it applies, and where each value came from",
		Long: "Print the configuration lathe applies in this workspace: the user's file\n" +
			"($XDG_CONFIG_HOME/lathe/config.toml), then the workspace's lathe.toml or --config FILE, merged, each\n" +
			"value with the file and line that set it, or \"default\" for lathe's own. What a file that is not\n" +
			"trusted would widen is left out: it is listed at the end, with the command that trusts it.\n" +
			"Values of an MCP server's env, headers and oauth.client_secret are hidden unless they name a ${VAR}.",
		Args: usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ws, err := g.workspaceDir()
			if err != nil {
				return err
			}
			cfg, pending, err := g.quietConfig(ws)
			if err != nil {
				return err
			}
			x := explainConfig(cfg, pending, ws)
			if len(pending) > 0 {
				x.TrustCommand = g.trustCommand(ws, pending)
			}
			if asJSON {
				return writeJSON(g.streams.Out, x)
			}
			return x.write(g.streams.Out)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the configuration as JSON")
	return cmd
}

// configJSON is what `lathe config` prints.
type configJSON struct {
	Workspace string        `json:"workspace"`
	Files     []fileJSON    `json:"files"`
	Settings  []settingJSON `json:"settings"`
	LeftOut   []leftOutJSON `json:"left_out"`
	// TrustCommand trusts the files whose settings were left out.
	TrustCommand string `json:"trust_command,omitempty"`
}

type fileJSON struct {
	Path string `json:"path"`
	// Applies is "whole" or "narrowing only" (the file needs trust it
	// lacks).
	Applies string `json:"applies"`
	// Trust is the file's trust: "yours" for the user's own file, "new"
	// or "changed" for one that lacks it, "trusted", or "not needed".
	Trust string `json:"trust"`
}

type settingJSON struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
	// From is "file:line", or "default".
	From string `json:"from"`
	// File and Line are the parts of From; absent for a default.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Note says more about a default.
	Note string `json:"note,omitempty"`

	path []string
}

type leftOutJSON struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Key  string `json:"key"`
	What string `json:"what"`
}

// explainConfig gathers what `lathe config` prints.
func explainConfig(cfg *config.Config, pending []load.Untrusted, ws string) *configJSON {
	x := &configJSON{Workspace: ws, Settings: []settingJSON{}, LeftOut: []leftOutJSON{}, Files: []fileJSON{}}
	left := map[string]load.Untrusted{}
	for _, p := range pending {
		left[p.File] = p
	}
	for _, f := range cfg.Files {
		fj := fileJSON{Path: f, Applies: "whole"}
		switch p, ok := left[f]; {
		case ok:
			fj.Applies, fj.Trust = "narrowing only", p.Status.String()
			for _, w := range p.Widenings {
				x.LeftOut = append(x.LeftOut, leftOutJSON{File: w.Pos.File, Line: w.Pos.Line, Key: w.Key, What: w.What})
			}
		case f == config.UserFile() && !statedir.Within(ws, f):
			// A user file inside the workspace needs trust like the
			// workspace's own (config.Source.User).
			fj.Trust = "yours"
		default:
			fj.Trust = trustOfApplied(f, ws)
		}
		x.Files = append(x.Files, fj)
		delete(left, f)
	}
	// What is left is tool files (NAME.ts, tool.json): not configuration,
	// but left out for want of trust all the same.
	for _, p := range pending {
		if _, ok := left[p.File]; ok {
			for _, w := range p.Widenings {
				x.LeftOut = append(x.LeftOut, leftOutJSON{File: w.Pos.File, Line: w.Pos.Line, Key: w.Key, What: w.What})
			}
		}
	}
	set := map[string]bool{}
	for _, s := range cfg.Settings() {
		name := s.Name()
		set[name] = true
		sj := settingJSON{Key: name, Value: hideSecret(s.Key, s.Value), From: defaultOrigin, path: s.Key}
		if s.Pos.File != "" {
			sj.From, sj.File, sj.Line = s.Pos.String(), s.Pos.File, s.Pos.Line
		}
		x.Settings = append(x.Settings, sj)
	}
	for _, d := range defaultSettings() {
		if !set[strings.Join(d.path, ".")] {
			x.Settings = append(x.Settings, d)
		}
	}
	return x
}

// trustOfApplied says why a workspace file that applied whole did: it was
// trusted, or it needs no trust.
func trustOfApplied(file, ws string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return "trusted"
	}
	c, err := config.Parse(file, data)
	if err != nil {
		return "trusted"
	}
	if _, ws := c.Split(); len(ws) == 0 {
		return "not needed"
	}
	return "trusted"
}

// defaultSettings are lathe's own values of the keys every configuration
// has, shown where no file sets them.
func defaultSettings() []settingJSON {
	lim := sandbox.Limits{}.WithDefaults()
	d := func(note string, value any, path ...string) settingJSON {
		return settingJSON{Key: strings.Join(path, "."), Value: value, From: defaultOrigin, Note: note, path: path}
	}
	return []settingJSON{
		d("", lathe.DefaultTimeout.String(), "defaults", "timeout"),
		d("", int64(lathe.DefaultMaxOutputBytes), "defaults", "max_output_bytes"),
		d("relative to the workspace", audit.DefaultPath, "audit", "path"),
		d("", true, "audit", "enable"),
		d("run_command runs under \"standard\"; other process tools and MCP servers run as host processes", nil,
			"sandbox", "profile"),
		d("", lim.Wall.String(), "sandbox", "limits", "wall_time"),
		d("bytes", lim.Memory, "sandbox", "limits", "memory"),
		d("", lim.CPU.String(), "sandbox", "limits", "cpu_time"),
		d("", int64(lim.Processes), "sandbox", "limits", "processes"),
		d("bytes", int64(lim.Output), "sandbox", "limits", "output_bytes"),
		d("bytes", lim.FileSize, "sandbox", "limits", "file_size"),
	}
}

// hideSecret hides the value of an MCP server's env or headers entry, or
// of its OAuth client secret, that holds a literal, which may be a token,
// rather than a ${VAR} naming one: the output of lathe config is the kind
// of thing pasted into a report.
func hideSecret(path []string, v any) any {
	if len(path) != 4 || path[0] != "mcp" ||
		(path[2] != "env" && path[2] != "headers" && (path[2] != "oauth" || path[3] != "client_secret")) {
		return v
	}
	if s, ok := v.(string); ok && !strings.Contains(s, "${") && s != "" {
		return "(hidden)"
	}
	return v
}

// write prints the configuration as TOML, each value with its place.
func (x *configJSON) write(w io.Writer) error {
	fmt.Fprintf(w, "# The configuration lathe applies in %s.\n", visible(x.Workspace))
	if len(x.Files) == 0 {
		fmt.Fprintln(w, "# No file sets anything: every value is lathe's default.")
	} else {
		fmt.Fprintln(w, "# Files, each over the one before:")
		for _, f := range x.Files {
			fmt.Fprintf(w, "#   %s (%s; applies %s)\n", visible(f.Path), f.Trust, f.Applies)
		}
	}

	// Group the values by table, a table before the tables within it and
	// otherwise in the order they first appear.
	type group struct {
		table []string
		rule  bool // a [[policy.rules]] table
		items []settingJSON
	}
	var groups []*group
	byTable := map[string]*group{}
	first := map[string]int{}
	for _, s := range x.Settings {
		table, rule := s.path[:len(s.path)-1], false
		if len(s.path) == 4 && s.path[0] == "policy" && s.path[1] == "rules" {
			rule = true
		}
		for i := 1; i <= len(table); i++ {
			k := strings.Join(table[:i], "\x00")
			if _, ok := first[k]; !ok {
				first[k] = len(first)
			}
		}
		k := strings.Join(table, "\x00")
		gr := byTable[k]
		if gr == nil {
			gr = &group{table: table, rule: rule}
			byTable[k] = gr
			groups = append(groups, gr)
		}
		gr.items = append(gr.items, s)
	}
	// The top-level tables come in the order Config declares them, the
	// defaults of a table beside the values files set in it.
	top := map[string]int{}
	ct := reflect.TypeFor[config.Config]()
	for i := range ct.NumField() {
		key, _, _ := strings.Cut(ct.Field(i).Tag.Get("toml"), ",")
		top[key] = i
	}
	slices.SortStableFunc(groups, func(a, b *group) int {
		for i := 0; i < len(a.table) && i < len(b.table); i++ {
			ra, rb := first[strings.Join(a.table[:i+1], "\x00")], first[strings.Join(b.table[:i+1], "\x00")]
			if i == 0 {
				ra, rb = top[a.table[0]], top[b.table[0]]
			}
			if ra != rb {
				return cmp.Compare(ra, rb)
			}
		}
		return cmp.Compare(len(a.table), len(b.table))
	})
	for _, gr := range groups {
		fmt.Fprintln(w)
		if gr.rule {
			fmt.Fprintf(w, "[[policy.rules]]  # %s\n", visible(gr.items[0].From))
			for _, s := range gr.items {
				fmt.Fprintf(w, "%s = %s\n", tomlKey(s.path[len(s.path)-1]), tomlValue(s.Value))
			}
			continue
		}
		fmt.Fprintf(w, "[%s]\n", tomlPath(gr.table))
		for _, s := range gr.items {
			key := tomlKey(s.path[len(s.path)-1])
			if s.Value == nil {
				fmt.Fprintf(w, "# %s is not set (%s): %s\n", key, s.From, visible(s.Note))
				continue
			}
			comment := visible(s.From)
			if s.Note != "" {
				comment += "; " + s.Note
			}
			fmt.Fprintf(w, "%s = %s  # %s\n", key, tomlValue(s.Value), comment)
		}
	}
	if len(x.LeftOut) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "# Left out, for want of trust:")
		for _, l := range x.LeftOut {
			fmt.Fprintf(w, "#   %s: %s: %s\n", visible(config.Pos{File: l.File, Line: l.Line}.String()), visible(l.Key), visible(l.What))
		}
		fmt.Fprintf(w, "# Read the file, then run: %s\n", visible(x.TrustCommand))
	}
	return nil
}

func visible(s string) string { return trust.Visible(s) }

func tomlPath(path []string) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = tomlKey(p)
	}
	return strings.Join(parts, ".")
}

// tomlKey writes a key bare when TOML allows it, else quoted.
func tomlKey(k string) string {
	if k != "" && !strings.ContainsFunc(k, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) {
		return k
	}
	return tomlString(k)
}

// tomlValue writes v, a value of config.Setting, as TOML.
func tomlValue(v any) string {
	switch v := v.(type) {
	case string:
		return tomlString(v)
	case bool:
		return strconv.FormatBool(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = tomlValue(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		parts := make([]string, 0, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			parts = append(parts, tomlKey(k)+" = "+tomlValue(v[k]))
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	}
	return tomlString(fmt.Sprint(v))
}

// tomlString quotes s as a TOML basic string in which every control and
// format character is escaped: a value of a hostile file cannot move the
// cursor, clear the screen or turn text around on the reader's terminal.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			b.WriteString(`\uFFFD`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029':
			if r > 0xFFFF {
				fmt.Fprintf(&b, `\U%08X`, r)
			} else {
				fmt.Fprintf(&b, `\u%04X`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

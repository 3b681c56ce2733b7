package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/trust"
)

// untrustedError reports a workspace configuration that needs a person's
// trust where lathe cannot ask and will not start without it (lathe serve),
// or a trust store that cannot be used.
type untrustedError struct{ err error }

func (e *untrustedError) Error() string { return e.err.Error() }
func (e *untrustedError) Unwrap() error { return e.err }

// trustMode says what loading a configuration does with a workspace file
// that needs trust and lacks it.
type trustMode int

const (
	// trustWarn applies the narrowing part and says on standard error what
	// was left out and how to trust it.
	trustWarn trustMode = iota
	// trustAsk asks the person on the terminal, when there is one, and
	// otherwise warns.
	trustAsk
	// trustRefuse fails: lathe serve does not start with part of its tools.
	trustRefuse
)

// trustStore returns the store of the user's trust records.
func trustStore() (*trust.Store, error) {
	dir, err := trust.DefaultDir()
	if err != nil {
		return nil, err
	}
	return trust.Open(dir), nil
}

// trustCommand is the command that trusts the files of pending: the
// workspace's own file by default, or each named.
func (g *globals) trustCommand(ws string, pending []load.Untrusted) string {
	cmd := "lathe trust --workspace " + shellQuote(ws)
	def := g.config
	if def == "" {
		def = filepath.Join(ws, config.WorkspaceFile)
	}
	if !slices.ContainsFunc(pending, func(u load.Untrusted) bool { return u.File != def }) {
		if g.config != "" {
			cmd += " --config " + shellQuote(g.config)
		}
		return cmd
	}
	for _, u := range pending {
		cmd += " " + shellQuote(u.File)
	}
	return cmd
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ',' || r == ':' || r == '@' ||
			r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func writeWidenings(w io.Writer, ws []config.Widening) {
	for _, x := range ws {
		fmt.Fprintf(w, "  %s\n", trust.Visible(x.String()))
	}
}

// showPending prints what a file would do and, when it was trusted with
// other bytes (or never), how it differs from what was trusted.
func showPending(w io.Writer, name string, st trust.Status, ws []config.Widening, diff string) {
	fmt.Fprintf(w, "%s is %s.\n", trust.Visible(name), st)
	if len(ws) > 0 {
		fmt.Fprintln(w, "It would:")
		writeWidenings(w, ws)
	} else {
		fmt.Fprintln(w, "It only narrows what lathe allows; lathe applies it without trust.")
	}
	if diff != "" {
		if st == trust.Changed {
			fmt.Fprintln(w, "Changes since it was trusted:")
		} else {
			fmt.Fprintln(w, "Its content:")
		}
		for _, l := range strings.SplitAfter(strings.TrimSuffix(diff, "\n"), "\n") {
			fmt.Fprint(w, "  ", strings.TrimSuffix(l, "\n"), "\n")
		}
	}
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// confirm asks a yes/no question whose answer is no unless the person types
// yes.
func confirm(in io.Reader, w io.Writer, question string) (bool, error) {
	fmt.Fprint(w, question+" [y/N] ")
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(w)
		return false, nil
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

func newTrustCmd(g *globals) *cobra.Command {
	var yes, revoke, list bool
	cmd := &cobra.Command{
		Use:   "trust [FILE...]",
		Short: "Trust the workspace's configuration, after showing what it would do",
		Long: "A workspace configuration that starts programs (local tools, toolsets, MCP servers), lets calls run\n" +
			"without asking, or loosens the sandbox applies only once you trust it, and again after every change.\n" +
			"lathe trust shows what the workspace's lathe.toml (or --config FILE, or each FILE given) would do and\n" +
			"what changed since it was trusted, asks, and records the file's SHA-256 outside the workspace\n" +
			"($XDG_STATE_HOME/lathe/trust). --yes trusts without asking. --revoke forgets the trust; --list shows\n" +
			"every record. Your own config file ($XDG_CONFIG_HOME/lathe/config.toml) is always trusted.",
		Args: usage(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := trustStore()
			if err != nil {
				return &untrustedError{err}
			}
			if list {
				if len(args) > 0 || revoke {
					return &usageError{errors.New("--list takes no files and no --revoke")}
				}
				return listTrust(g.streams.Out, store)
			}
			ws, err := g.workspaceDir()
			if err != nil {
				return err
			}
			files := args
			if len(files) == 0 {
				f := g.config
				if f == "" {
					f = filepath.Join(ws, config.WorkspaceFile)
				}
				files = []string{f}
			}
			for _, f := range files {
				if revoke {
					had, err := store.Revoke(ws, f)
					if err != nil {
						return &untrustedError{err}
					}
					if had {
						fmt.Fprintf(g.streams.Out, "%s is no longer trusted\n", trust.Visible(f))
					} else {
						fmt.Fprintf(g.streams.Out, "%s was not trusted\n", trust.Visible(f))
					}
					continue
				}
				if err := g.trustFile(store, ws, f, yes); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "trust without asking")
	cmd.Flags().BoolVar(&revoke, "revoke", false, "forget the trust in the files")
	cmd.Flags().BoolVar(&list, "list", false, "list every trusted file")
	return cmd
}

// trustFile shows what file would do and records it as trusted, once the
// person says so (or yes). The bytes shown are the bytes recorded: the file
// is read once.
func (g *globals) trustFile(store *trust.Store, ws, file string, yes bool) error {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return &usageError{fmt.Errorf("%s does not exist: nothing to trust", file)}
	}
	if err != nil {
		return err
	}
	var widenings []config.Widening
	if load.IsToolFile(file) {
		// A tool file is trusted with every file it is built from: what is
		// recorded is their content, each with its hash.
		if data, err = load.ToolTrustText(ws, file); err != nil {
			return &configError{fmt.Errorf("%w\n%s was not trusted: fix it first", err, file)}
		}
		widenings = []config.Widening{{Pos: config.Pos{File: file}, Key: "tool", What: "runs a JavaScript tool built from the files below"}}
	} else {
		c, err := config.Parse(file, data)
		if err != nil {
			return &configError{fmt.Errorf("%w\n%s was not trusted: fix it first", err, file)}
		}
		_, widenings = c.Split()
	}
	st, rec, err := store.Check(ws, file, data)
	if err != nil && rec == nil && !errors.Is(err, trust.ErrInsideWorkspace) && !errors.Is(err, fs.ErrNotExist) {
		// A corrupt record is shown as such and replaced once the person
		// trusts the file again.
		fmt.Fprintf(g.streams.Err, "lathe: %v\n", err)
	}
	if errors.Is(err, trust.ErrInsideWorkspace) {
		return &untrustedError{err}
	}
	out := g.streams.Out
	if st == trust.Trusted {
		fmt.Fprintf(out, "%s is already trusted (sha256 %s, %s)\n", trust.Visible(file), rec.SHA256[:12], rec.Time.Format(time.RFC3339))
		return nil
	}
	old := ""
	if rec != nil {
		old = rec.Content
	}
	showPending(out, file, st, widenings, trust.Diff(old, string(data)))
	if !yes {
		if !isTerminal(g.streams.In) {
			return &untrustedError{fmt.Errorf("%s was not trusted: standard input is not a terminal to ask on; run lathe trust --yes after reading it", file)}
		}
		ok, err := confirm(g.streams.In, g.streams.Err, "Trust "+trust.Visible(file)+"?")
		if err != nil {
			return err
		}
		if !ok {
			return &untrustedError{fmt.Errorf("%s was not trusted", file)}
		}
	}
	if err := store.Trust(ws, file, data); err != nil {
		return &untrustedError{err}
	}
	fmt.Fprintf(out, "trusted %s (sha256 %s)\n", trust.Visible(file), trust.Sum(data)[:12])
	return nil
}

func listTrust(w io.Writer, store *trust.Store) error {
	recs, err := store.List()
	for _, r := range recs {
		state := "unchanged"
		data, rerr := os.ReadFile(r.File)
		if rerr == nil && load.IsToolFile(r.File) {
			data, rerr = load.ToolTrustText(r.Workspace, r.File)
		}
		switch {
		case errors.Is(rerr, fs.ErrNotExist):
			state = "missing"
		case rerr != nil:
			state = "unreadable"
		case trust.Sum(data) != r.SHA256:
			state = "changed"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", trust.Visible(r.File), trust.Visible(r.Workspace), r.Time.Format(time.RFC3339), state)
	}
	if err != nil {
		return &untrustedError{err}
	}
	return nil
}

package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lathe-tools/lathe/audit"
)

func newAuditCmd(g *globals) *cobra.Command {
	var (
		f      audit.Filter
		since  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "List the calls recorded in the audit log",
		Long: "List the calls recorded in the workspace's audit log (.lathe/lathe.db unless [audit] path says\n" +
			"otherwise), oldest first: time, tool, decision and who decided, outcome, duration, sizes and the\n" +
			"arguments with secret-looking values redacted. A call whose outcome is \"incomplete\" has not\n" +
			"ended: it is running, or the process that ran it died.",
		Args: usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return &usageError{err}
				}
				f.Since = t
			}
			s, err := g.openAudit()
			if err != nil || s == nil {
				if err == nil && asJSON {
					fmt.Fprintln(g.streams.Out, "[]")
				}
				return err
			}
			defer s.Close()
			recs, err := s.List(cmd.Context(), f)
			if err != nil {
				return err
			}
			if asJSON {
				if recs == nil {
					recs = []audit.Record{}
				}
				return writeJSON(g.streams.Out, recs)
			}
			tw := tabwriter.NewWriter(g.streams.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tTOOL\tDECISION\tBY\tOUTCOME\tDURATION\tIN/OUT\tARGUMENTS")
			for _, r := range recs {
				outcome := r.Outcome
				if r.Incomplete {
					outcome = "incomplete"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n", r.Time.Local().Format(time.DateTime), r.Tool,
					dash(r.Decision), dash(r.DecidedBy), outcome, r.Duration.Round(time.Millisecond),
					r.ArgsBytes, r.ResultBytes, shorten(r.Arguments, 60))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&f.Tool, "tool", "", "only calls of tools matching this pattern (* and ?)")
	cmd.Flags().StringVar(&f.Decision, "decision", "", "only calls with this decision: allow, deny")
	cmd.Flags().StringVar(&f.Outcome, "outcome", "", "only calls with this outcome: ok, question, incomplete, or an error kind")
	cmd.Flags().StringVar(&since, "since", "", "only calls since this time: a duration ago (1h) or an RFC 3339 time")
	cmd.Flags().IntVar(&f.Limit, "limit", 100, "show the newest N calls; 0 or less shows all")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the records as a JSON array")
	cmd.AddCommand(newGrantsCmd(g), newRevokeCmd(g))
	// A zero or negative --limit means all, which audit.Filter spells -1.
	cmd.PreRun = func(*cobra.Command, []string) {
		if f.Limit <= 0 {
			f.Limit = -1
		}
	}
	return cmd
}

func newGrantsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "grants",
		Short: "List the tools a person allowed always",
		Args:  usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := g.openAudit()
			if err != nil || s == nil {
				if err == nil && asJSON {
					fmt.Fprintln(g.streams.Out, "[]")
				}
				return err
			}
			defer s.Close()
			gs, err := s.Grants(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				if gs == nil {
					return writeJSON(g.streams.Out, []any{})
				}
				return writeJSON(g.streams.Out, gs)
			}
			for _, gr := range gs {
				line := gr.Tool
				if gr.Command != "" {
					line += " " + strconv.Quote(gr.Command)
				}
				fmt.Fprintf(g.streams.Out, "%s\t%s\n", line, gr.Created.Local().Format(time.DateTime))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the grants as a JSON array")
	return cmd
}

func newRevokeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke TOOL",
		Short: "Remove the grants of a tool (all its command lines): its calls ask again",
		Args:  usage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.openAudit()
			if err != nil {
				return err
			}
			if s == nil {
				return &usageError{fmt.Errorf("no grant for %s", args[0])}
			}
			defer s.Close()
			ok, err := s.RevokeGrant(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if !ok {
				return &usageError{fmt.Errorf("no grant for %s", args[0])}
			}
			fmt.Fprintf(g.streams.Out, "revoked the grant for %s\n", args[0])
			return nil
		},
	}
}

// openAudit opens the workspace's audit database, or returns nil when no
// call has created it yet.
func (g *globals) openAudit() (*audit.Store, error) {
	ws := g.workspace
	if ws == "" {
		ws = "."
	}
	ws, err := filepath.Abs(ws)
	if err != nil {
		return nil, &usageError{err}
	}
	// An untrusted [audit] path is not followed: it could name a database
	// of forged grants.
	cfg, _, err := g.loadConfig(ws, trustWarn)
	if err != nil {
		return nil, err
	}
	path := auditPath(cfg, ws)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return audit.Open(path)
}

// parseSince reads --since: a duration before now, or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration (1h30m) or an RFC 3339 time", s)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func shorten(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

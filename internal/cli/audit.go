package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/trust"
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
			"ended: it is running, or the process that ran it died.\n\n" +
			"With --operations, each call is followed by what its tool asked lathe's host for (files read and\n" +
			"written, URLs fetched, commands run, variables read), one line each: the operation, what the\n" +
			"policy said and who decided, whether it failed, how long it took, the bytes it moved, and its\n" +
			"subject, secrets redacted.\n\n" +
			"The resource reads and prompt gets of lathe serve's clients are in the log too, shown as\n" +
			"resource_read SERVER:URI or prompt_get SERVER:NAME, with the client's session in --json.",
		Args: usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkAuditFilter(&f); err != nil {
				return &usageError{err}
			}
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
				// A call another call made (a run_code script's) is marked
				// as its child.
				name := auditSubject(r)
				if r.Parent != 0 {
					name = "└ " + name
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n", r.Time.Local().Format(time.DateTime), name,
					dash(r.Decision), dash(r.DecidedBy), outcome, r.Duration.Round(time.Millisecond),
					r.ArgsBytes, r.ResultBytes, shorten(r.Arguments, 60))
				writeOperations(tw, r)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&f.Tool, "tool", "", "only calls of tools matching this pattern (* and ?)")
	cmd.Flags().StringVar(&f.Decision, "decision", "", "only calls with this decision: "+strings.Join(auditDecisions, ", "))
	cmd.Flags().StringVar(&f.Outcome, "outcome", "", "only calls with this outcome: ok, question, incomplete, or an error kind")
	cmd.Flags().StringVar(&since, "since", "", "only calls since this time: a duration ago (1h) or an RFC 3339 time")
	cmd.Flags().IntVar(&f.Limit, "limit", 100, "show the newest N calls; 0 or less shows all")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the records as a JSON array")
	cmd.Flags().BoolVar(&f.Operations, "operations", false, "show each call's host operations (files, URLs, commands) under it")
	cmd.AddCommand(newGrantsCmd(g), newGrantCmd(g), newRevokeCmd(g))
	// A zero or negative --limit means all, which audit.Filter spells -1.
	cmd.PreRun = func(*cobra.Command, []string) {
		if f.Limit <= 0 {
			f.Limit = -1
		}
	}
	return cmd
}

// writeOperations writes the host operations of r under its row, in the
// same columns: the operation where the tool is, its approval and who
// decided, "ok", "denied" or "failed", its duration, the bytes it moved, and its
// subject where the arguments are. Every subject is shown whole: a call's
// arguments may be cut to fit a line, but which files a tool touched is
// what the reader looks for.
func writeOperations(w io.Writer, r audit.Record) {
	for _, op := range r.Operations {
		status := "ok"
		switch {
		case op.Approval == "deny":
			// A denied operation never ran, whether or not its record
			// carries an error.
			status = "denied"
		case op.Error != "":
			status = "failed"
		}
		fmt.Fprintf(w, "\t  %s\t%s\t%s\t%s\t%s\t%d\t%s\n", op.Kind, dash(op.Approval), dash(op.DecidedBy), status,
			op.Duration.Round(time.Millisecond), op.Bytes, visible(op.Subject))
	}
	if r.OperationsDropped > 0 {
		fmt.Fprintf(w, "\t  (%d more operations not kept)\t\t\t\t\t\t\n", r.OperationsDropped)
	}
}

// auditDecisions and auditOutcomes are the values --decision and --outcome
// accept: the values an audit record can hold. A filter on any other value
// would match nothing and look like an empty log, so it is refused.
var (
	auditDecisions = []string{string(policy.Allow), string(policy.Ask), string(policy.Deny)}
	auditOutcomes  = []string{"ok", "question", "incomplete",
		string(tool.KindUnknownTool), string(tool.KindInvalidArguments), string(tool.KindDenied),
		string(tool.KindTimeout), string(tool.KindCancelled), string(tool.KindRuntimeFailure),
		string(tool.KindToolError)}
)

// checkAuditFilter refuses a --decision or --outcome no record can have.
func checkAuditFilter(f *audit.Filter) error {
	if f.Decision != "" && !slices.Contains(auditDecisions, f.Decision) {
		return fmt.Errorf("--decision %q: want one of %s", f.Decision, strings.Join(auditDecisions, ", "))
	}
	if f.Outcome != "" && !slices.Contains(auditOutcomes, f.Outcome) {
		return fmt.Errorf("--outcome %q: want one of %s", f.Outcome, strings.Join(auditOutcomes, ", "))
	}
	return nil
}

func newGrantsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "grants",
		Short: "List the tools a person allowed always",
		Long: "List the workspace's grants: the tools, and for a tool that runs command lines the command\n" +
			"lines, that a person allowed always. They are kept outside the workspace, in the user's state\n" +
			"directory ($XDG_STATE_HOME/lathe/grants), where no tool can write them.",
		Args: usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			gr, err := g.workspaceGrants()
			if err != nil {
				return err
			}
			gs, err := gr.List(cmd.Context())
			if err != nil && len(gs) == 0 {
				return &untrustedError{err}
			}
			if err != nil {
				fmt.Fprintf(g.streams.Err, "lathe: %v\n", err)
			}
			g.noteLegacyGrants(cmd.Context(), gs)
			if asJSON {
				if gs == nil {
					return writeJSON(g.streams.Out, []any{})
				}
				return writeJSON(g.streams.Out, gs)
			}
			for _, gr := range gs {
				fmt.Fprintf(g.streams.Out, "%s\t%s\n", grantLine(gr), gr.Created.Local().Format(time.DateTime))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the grants as a JSON array")
	return cmd
}

// workspaceGrants opens the grants of the workspace for the audit
// commands; a store lathe cannot open, or will not trust, is an
// untrustedError.
func (g *globals) workspaceGrants() (*audit.Grants, error) {
	ws, err := g.workspaceDir()
	if err != nil {
		return nil, err
	}
	gr, err := openGrants(ws)
	if err != nil {
		return nil, &untrustedError{err}
	}
	return gr, nil
}

// grantLine is a grant as a person reads it: the tool, and the command
// line it covers, quoted, when there is one.
func grantLine(gr policy.Grant) string {
	if gr.Command == "" {
		return gr.Tool
	}
	return gr.Tool + " " + strconv.Quote(gr.Command)
}

// noteLegacyGrants says on standard error which grants an earlier lathe
// kept in the workspace's audit database, and that are not granted again:
// they are not honoured any more, since anything that could write the
// workspace could have written them.
func (g *globals) noteLegacyGrants(ctx context.Context, now []policy.Grant) {
	s, err := g.openAudit()
	if err != nil || s == nil {
		return
	}
	defer s.Close()
	old, err := s.LegacyGrants(ctx)
	if err != nil {
		return
	}
	old = slices.DeleteFunc(old, func(o policy.Grant) bool {
		return slices.ContainsFunc(now, func(n policy.Grant) bool { return n.Tool == o.Tool && n.Command == o.Command })
	})
	if len(old) == 0 {
		return
	}
	fmt.Fprintf(g.streams.Err, "lathe: %d grants in %s are no longer honoured: the workspace's audit log is not a\n"+
		"place for rules, since anything that writes the workspace could have written them. Grant again those you\n"+
		"still want, after reading them (lathe audit revoke --old forgets them all):\n", len(old), s.Path())
	for _, gr := range old {
		line := "lathe audit grant " + shellQuote(gr.Tool)
		if gr.Command != "" {
			line += " --command " + shellQuote(gr.Command)
		}
		fmt.Fprintf(g.streams.Err, "  %s\n", trust.Visible(line))
	}
}

func newGrantCmd(g *globals) *cobra.Command {
	var command string
	cmd := &cobra.Command{
		Use:   "grant TOOL [--command LINE]",
		Short: "Allow a tool always, in this workspace: its calls run without asking",
		Long: "Allow a tool always, as answering \"always\" when lathe asks does: calls of TOOL in this workspace\n" +
			"that the policy would ask about run without asking. Deny rules still hold. For a tool that runs\n" +
			"command lines (run_command), a grant covers the one command line --command names.",
		Args: usage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !tool.ValidName(args[0]) {
				return &usageError{fmt.Errorf("%q is not a tool name", args[0])}
			}
			gr, err := g.workspaceGrants()
			if err != nil {
				return err
			}
			grant := policy.Grant{Tool: args[0], Command: command, Created: time.Now()}
			if err := gr.AddGrant(cmd.Context(), grant); err != nil {
				return &untrustedError{err}
			}
			fmt.Fprintf(g.streams.Out, "granted %s in %s\n", trust.Visible(grantLine(grant)), gr.Workspace())
			return nil
		},
	}
	cmd.Flags().StringVar(&command, "command", "", "the one command line the grant covers, for a tool that runs command lines")
	return cmd
}

func newRevokeCmd(g *globals) *cobra.Command {
	var old bool
	cmd := &cobra.Command{
		Use:   "revoke TOOL | --old",
		Short: "Remove the grants of a tool (all its command lines): its calls ask again",
		Long: "Remove the grants of a tool (all its command lines): its calls ask again. With --old, forget\n" +
			"the grants an earlier lathe kept in the workspace's audit log; they are not honoured anyway.",
		Args: usage(func(cmd *cobra.Command, args []string) error {
			if old {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		}),
		RunE: func(cmd *cobra.Command, args []string) error {
			if old {
				s, err := g.openAudit()
				if err != nil {
					return err
				}
				found := false
				if s != nil {
					defer s.Close()
					if found, err = s.DropLegacyGrants(cmd.Context()); err != nil {
						return err
					}
				}
				if !found {
					return &usageError{errors.New("no old grants in the audit log")}
				}
				fmt.Fprintf(g.streams.Out, "forgot the old grants in %s\n", s.Path())
				return nil
			}
			gr, err := g.workspaceGrants()
			if err != nil {
				return err
			}
			ok, err := gr.Revoke(cmd.Context(), args[0])
			if err != nil {
				return &untrustedError{err}
			}
			if !ok {
				return &usageError{fmt.Errorf("no grant for %s", args[0])}
			}
			fmt.Fprintf(g.streams.Out, "revoked the grant for %s\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&old, "old", false, "forget the grants an earlier lathe kept in the audit log")
	return cmd
}

// openAudit opens the workspace's audit database, or returns nil when no
// call has created it yet.
func (g *globals) openAudit() (*audit.Store, error) {
	// An untrusted [audit] path is not followed: it could name a database
	// of forged grants.
	w, err := g.readWorkspace(trustWarn)
	if err != nil {
		return nil, err
	}
	path := w.AuditPath()
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

// auditSubject is what a record is of: a call's tool, or, for a client's
// resource read or prompt get through lathe serve, the kind, the upstream
// server and the URI or prompt name, as in "resource_read ev:test://a".
func auditSubject(r audit.Record) string {
	if r.Kind == "" {
		return r.Tool
	}
	return r.Kind + " " + dash(r.Server) + ":" + r.Tool
}

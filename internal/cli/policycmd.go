package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/tool"
)

func newPolicyCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Dry-run the approval policy",
		Args:  usage(cobra.NoArgs),
	}
	cmd.AddCommand(newPolicyCheckCmd(g))
	return cmd
}

func newPolicyCheckCmd(g *globals) *cobra.Command {
	var asJSON bool
	var operation string
	cmd := &cobra.Command{
		Use:   "check NAME [JSON | - | key=value ...] | check NAME --operation KIND SUBJECT",
		Short: "Say whether a call would be allowed, asked about or denied, without running it",
		Long: "Dry-run the policy for a call of the tool NAME with the arguments given as `lathe call` takes them:\n" +
			"the arguments are checked against the tool's schema first, then the policy says allow, ask or\n" +
			"deny, naming the rule (file:line) or the default behind it, and whether a stored grant would\n" +
			"settle an ask. Nothing runs and nobody is asked. The decision is the one a call from an agent\n" +
			"gets; `lathe call`, typed by a person, counts as that person's approval of an ask.\n\n" +
			"With --operation KIND SUBJECT, the policy says instead what it makes of one host operation the\n" +
			"tool may ask for while it runs (KIND is " + strings.Join(policy.OperationKinds(), ", ") + "; SUBJECT a path\n" +
			"relative to the workspace, a URL, a command line or a variable's name), by the rules that name\n" +
			"an operation. The tool's permissions are not looked at.\n\n" +
			"Exit status: 0 allow, 6 deny, 10 ask (a person would be asked), and as for lathe call an\n" +
			"unknown tool (4) or invalid arguments (5).",
		Args: usage(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("operation") {
				return checkOperation(cmd, g, args, operation, asJSON)
			}
			raw, err := parseArguments(args[1:], g.streams.In)
			if err != nil {
				return &usageError{err}
			}
			w, d, err := g.lookupTool(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			cfg, ws := w.Config, w.Dir
			v, err := w.Engine.Arguments(cmd.Context(), &tool.Call{Name: d.Name, Arguments: raw})
			if err != nil {
				return err
			}
			grants, note := grantsOf(cfg, ws)
			c := checkOf(cfg, &d, load.Policy(cfg).DryRun(cmd.Context(), grants, &d, v), note)
			if asJSON {
				err = writeJSON(g.streams.Out, struct {
					Tool      string `json:"tool"`
					Arguments any    `json:"arguments"`
					check
				}{d.Name, v, c})
			} else {
				writeCheck(g.streams.Out, d.Name+": ", c)
				if c.Decision == string(policy.Ask) {
					fmt.Fprintf(g.streams.Out, "%*sa call from an agent asks the person serving it, and is denied when no one can be asked;\n"+
						"%*slathe call, typed by a person, runs it\n", len(d.Name)+2, "", len(d.Name)+2, "")
				}
			}
			if err != nil {
				return err
			}
			return checkExit(d, c)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the decision as JSON")
	cmd.Flags().StringVar(&operation, "operation", "", "check the host operation KIND on SUBJECT (the argument after NAME) instead of a call")
	return cmd
}

// checkOperation is `lathe policy check NAME --operation KIND SUBJECT`.
func checkOperation(cmd *cobra.Command, g *globals, args []string, kind string, asJSON bool) error {
	if !slices.Contains(policy.OperationKinds(), kind) {
		return &usageError{fmt.Errorf("--operation %q: want one of %s", kind, strings.Join(policy.OperationKinds(), ", "))}
	}
	if len(args) != 2 {
		return &usageError{fmt.Errorf("--operation %s wants NAME and one SUBJECT, got %d arguments", kind, len(args))}
	}
	w, d, err := g.lookupTool(cmd.Context(), args[0])
	if err != nil {
		return err
	}
	op := policy.OperationRequest{Kind: kind, Subject: args[1]}
	dec := load.Policy(w.Config).DecideOperation(&d, op)
	c := check{Decision: string(dec.Approval), By: dec.By, Rule: ruleOf(dec.Rule), Reason: dec.Reason}
	if asJSON {
		err = writeJSON(g.streams.Out, struct {
			Tool      string `json:"tool"`
			Operation string `json:"operation"`
			Subject   string `json:"subject"`
			check
		}{d.Name, kind, op.Subject, c})
	} else {
		writeCheck(g.streams.Out, d.Name+" "+kind+" "+strconv.Quote(op.Subject)+": ", c)
	}
	if err != nil {
		return err
	}
	return checkExit(d, c)
}

// checkExit is the error, already reported, whose exit code says what the
// policy decided: none for allow, [ExitDenied] for deny, [ExitNeedsInput]
// for ask, since a person would have to answer.
func checkExit(d tool.Definition, c check) error {
	switch policy.Approval(c.Decision) {
	case policy.Allow:
		return nil
	case policy.Deny:
		return &silentError{&tool.Error{Kind: tool.KindDenied, Tool: d.Name, Stage: "policy", Message: c.Reason}}
	}
	return &silentError{&needsInputError{&tool.Question{Text: "a person would be asked: " + c.Reason}}}
}

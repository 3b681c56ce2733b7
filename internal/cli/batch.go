package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/plan"
	"github.com/lathe-tools/lathe/provider"
	"github.com/lathe-tools/lathe/tool"
)

func newBatchCmd(g *globals) *cobra.Command {
	var (
		asJSON, showPlan, stopOnError bool
		maxConcurrency                int
		answers                       []string
		previous, format              string
	)
	cmd := &cobra.Command{
		Use:   "batch FILE|-",
		Short: "Run several tool calls, at once where they do not conflict",
		Long: "Run the tool calls listed in FILE (or standard input): a JSON array of {\"name\", \"arguments\"}\n" +
			"objects, or tool calls as OpenAI, Anthropic and Gemini models write them, up to a provider's whole\n" +
			"response. Calls that cannot interfere run at once; calls that touch the same file keep their order.\n" +
			"The outcomes are printed in the order of the calls; --json prints them as a JSON array, --format\n" +
			"prints them as the tool-result messages of a provider (a JSON array to append to the conversation),\n" +
			"and --plan prints the plan without running anything.\n\n" +
			"When calls ask questions, the others still run; lathe asks the questions on the terminal and runs\n" +
			"the calls still pending again. Without a terminal it prints them and exits with code 10; run again\n" +
			"with --answer N:ID=VALUE (N counts calls from 1) and --previous set to the earlier --json output,\n" +
			"so that only the pending calls run, with the answers given in every earlier run.",
		Args: usage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxConcurrency < 0 {
				return &usageError{fmt.Errorf("--max-concurrency %d: want 1 or more, or 0 for the configured cap", maxConcurrency)}
			}
			var outFormat provider.Format
			if format != "" {
				var err error
				if outFormat, err = provider.ParseFormat(format); err != nil {
					return &usageError{fmt.Errorf("--format: %w", err)}
				}
				if asJSON || showPlan {
					return &usageError{errors.New("--format prints the results as a provider's messages: it goes with neither --json nor --plan")}
				}
			}
			calls, inFormat, err := readCalls(args[0], g.streams.In)
			if err != nil {
				return &usageError{err}
			}
			opts := &lathe.BatchOptions{StopOnError: stopOnError, MaxConcurrency: maxConcurrency}
			// The earlier run's answers go in first, so that the answers
			// given now replace them.
			if previous != "" {
				if opts.Previous, err = readPrevious(previous, calls); err != nil {
					return &usageError{err}
				}
			}
			if err := applyAnswers(calls, answers); err != nil {
				return &usageError{err}
			}
			if err := checkAnswers(calls, opts.Previous); err != nil {
				return &usageError{err}
			}
			g.approver = terminalApprover(g.streams)
			// Only servers that may hold the batch's tools are started.
			g.need = make([]string, 0, len(calls))
			for _, c := range calls {
				g.need = append(g.need, c.Name)
			}
			e, err := g.openEngine()
			if err != nil {
				return err
			}
			defer e.Close()
			// Calls in a provider's shape map back through that
			// provider's conversion of the tools: strict mode's nulls for
			// the properties a model left out are dropped.
			if inFormat != provider.Lathe {
				in, err := provider.Convert(inFormat, e.Tools(), nil)
				if err != nil {
					return err
				}
				in.Resolve(calls)
			}
			if showPlan {
				return printPlan(g.streams.Out, e, calls, asJSON)
			}
			ask := terminalAsker(g.streams)
			outs := e.CallBatch(cmd.Context(), calls, opts)
			for ask != nil && anyQuestion(outs) {
				for i, o := range outs {
					if o.Question == nil {
						continue
					}
					fmt.Fprintf(g.streams.Err, "#%d %s asks:\n", i+1, calls[i].Name)
					a, err := ask(o.Question)
					if err != nil {
						return err
					}
					if calls[i].Answers == nil {
						calls[i].Answers = map[string]any{}
					}
					calls[i].Answers[o.Question.ID] = a
				}
				opts.Previous = outs
				outs = e.CallBatch(cmd.Context(), calls, opts)
			}
			if outFormat != "" {
				return printMessages(g.streams, e, outFormat, calls, outs)
			}
			return printOutcomes(g.streams, calls, outs, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array with one outcome per call, in order")
	cmd.Flags().BoolVar(&showPlan, "plan", false, "print the plan (stages, effects, order) without running anything")
	cmd.Flags().BoolVar(&stopOnError, "stop-on-error", false, "stop the batch at the first call that fails")
	cmd.Flags().IntVar(&maxConcurrency, "max-concurrency", 0, "run at most N calls at once (default: the configured cap)")
	cmd.Flags().StringArrayVar(&answers, "answer", nil, "answer a question, as N:ID=VALUE for call N or ID=VALUE for every call (repeatable)")
	cmd.Flags().StringVar(&previous, "previous", "", "the --json output of an earlier run of the same batch; calls it settled do not run again")
	cmd.Flags().StringVar(&format, "format", "", "print the results as a provider's tool-result messages: "+formatNames())
	return cmd
}

// printMessages prints the outcomes as the tool-result messages of format
// f, and returns the error that carries the batch's exit code.
func printMessages(s Streams, e *lathe.Engine, f provider.Format, calls []*tool.Call, outs []lathe.BatchOutcome) error {
	ts, err := provider.Convert(f, e.Tools(), nil)
	if err != nil {
		return err
	}
	replies := make([]provider.Reply, len(calls))
	for i := range calls {
		replies[i] = provider.Reply{Call: calls[i], Outcome: &outs[i].Outcome}
	}
	msgs, err := ts.Results(replies)
	if err != nil {
		return err
	}
	if err := writeJSON(s.Out, msgs); err != nil {
		return err
	}
	if q := firstQuestion(outs); q != nil {
		fmt.Fprintln(s.Err, "pending: calls ask questions; run again with --answer, or with --json to keep the settled calls for --previous")
	}
	return batchError(outs)
}

// readCalls reads the batch from a file, or from stdin for "-", and says in
// which provider's shape it was written.
func readCalls(name string, stdin io.Reader) ([]*tool.Call, provider.Format, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading calls: %w", err)
	}
	calls, f, err := parseCalls(data)
	if err != nil {
		return nil, "", fmt.Errorf("reading calls from %s: %w", displayName(name), err)
	}
	return calls, f, nil
}

func displayName(name string) string {
	if name == "-" {
		return "standard input"
	}
	return name
}

// parseCalls reads a batch (see [provider.ParseCalls]) and refuses a call
// whose name no tool of lathe can have: a name is printed at the head of
// its outcome, and one with a newline or an escape sequence could pass for
// another call's outcome.
func parseCalls(data []byte) ([]*tool.Call, provider.Format, error) {
	calls, f, err := provider.ParseCalls(data)
	if err != nil {
		return nil, "", err
	}
	for i, c := range calls {
		if !tool.ValidName(c.Name) {
			return nil, "", fmt.Errorf("call %d: invalid tool name %q: a tool name matches %s", i+1, c.Name, tool.NamePattern)
		}
	}
	return calls, f, nil
}

// displayID returns a call's ID as the batch's output shows it: as it is
// when it is printable without spaces, as the IDs models make are, and
// quoted otherwise, so that an ID can never read as more output.
func displayID(id string) string {
	for _, r := range id {
		if r == utf8.RuneError || !unicode.IsGraphic(r) || unicode.IsSpace(r) || r == '"' {
			return strconv.Quote(id)
		}
	}
	return id
}

// applyAnswers adds --answer flags to the calls: N:ID=VALUE answers call N,
// counting from 1; ID=VALUE answers every call that asks ID.
func applyAnswers(calls []*tool.Call, flags []string) error {
	for _, f := range flags {
		targets := calls
		if n, rest, ok := strings.Cut(f, ":"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			i, err := strconv.Atoi(n)
			if err != nil || i < 1 || i > len(calls) {
				return fmt.Errorf("--answer %q: there is no call %s; calls count from 1 to %d", f, n, len(calls))
			}
			targets, f = calls[i-1:i], rest
		}
		ans, err := parseAnswers([]string{f})
		if err != nil {
			return err
		}
		for _, c := range targets {
			if c.Answers == nil {
				c.Answers = map[string]any{}
			}
			for id, v := range ans {
				c.Answers[id] = v
			}
		}
	}
	return nil
}

// readPrevious reads the --json output of an earlier run of the batch. It
// adds the answers the earlier run carried to the calls, where a call does
// not answer the same question itself, so that answers given in any earlier
// run carry on.
func readPrevious(name string, calls []*tool.Call) ([]lathe.BatchOutcome, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("--previous: %w", err)
	}
	var prev []outcomeJSON
	if err := json.Unmarshal(data, &prev); err != nil {
		return nil, fmt.Errorf("--previous %s: want the --json output of lathe batch: %w", name, err)
	}
	if len(prev) != len(calls) {
		return nil, fmt.Errorf("--previous %s holds %d outcomes for %d calls", name, len(prev), len(calls))
	}
	outs := make([]lathe.BatchOutcome, len(prev))
	for i := range prev {
		p := &prev[i]
		if p.Name != calls[i].Name {
			return nil, fmt.Errorf("--previous %s: outcome %d is of %s, but call %d is of %s", name, i+1, p.Name, i+1, calls[i].Name)
		}
		if outs[i], err = decodeOutcome(p, len(calls)); err != nil {
			return nil, fmt.Errorf("--previous %s: outcome %d: %w", name, i+1, err)
		}
		for id, a := range p.Answers {
			if _, ok := calls[i].Answers[id]; ok {
				continue
			}
			if calls[i].Answers == nil {
				calls[i].Answers = map[string]any{}
			}
			calls[i].Answers[id] = a
		}
	}
	return outs, nil
}

// checkAnswers checks each answer to a question an earlier run asked (the
// questions of prev) against the question: a select answer must be one of
// its options. The tool would get an answer it never offered otherwise.
func checkAnswers(calls []*tool.Call, prev []lathe.BatchOutcome) error {
	for i, o := range prev {
		q := o.Question
		if q == nil {
			continue
		}
		a, ok := calls[i].Answers[q.ID]
		if !ok {
			continue
		}
		if err := q.CheckAnswer(a); err != nil {
			return fmt.Errorf("call %d (%s): %w", i+1, calls[i].Name, err)
		}
	}
	return nil
}

func anyQuestion(outs []lathe.BatchOutcome) bool {
	for _, o := range outs {
		if o.Question != nil {
			return true
		}
	}
	return false
}

// printOutcomes prints each call's outcome under a header line, in order,
// and returns an error that carries the exit code: 10 if a call still needs
// an answer, else the code of the first call that failed.
func printOutcomes(s Streams, calls []*tool.Call, outs []lathe.BatchOutcome, asJSON bool) error {
	if asJSON {
		elems := make([]outcomeJSON, len(outs))
		for i, o := range outs {
			elems[i] = encodeOutcome(i, calls[i], &o.Outcome, o.WaitsFor)
		}
		if err := writeJSON(s.Out, elems); err != nil {
			return err
		}
	}
	var failed, asked, waiting int
	for i, o := range outs {
		head := fmt.Sprintf("--- #%d %s", i+1, calls[i].Name)
		if calls[i].ID != "" {
			head += " (" + displayID(calls[i].ID) + ")"
		}
		switch {
		case o.Question != nil:
			asked++
			if !asJSON {
				q := o.Question
				fmt.Fprintf(s.Out, "%s: asks %s\n%s %s\nanswer with: --answer %d:%s=VALUE\n", head, q.ID, q.Text, hint(q), i+1, q.ID)
			}
		case o.Waiting():
			waiting++
			if !asJSON {
				refs := make([]string, len(o.WaitsFor))
				for k, j := range o.WaitsFor {
					refs[k] = "#" + strconv.Itoa(j+1)
				}
				fmt.Fprintf(s.Out, "%s: waits for %s\n", head, strings.Join(refs, ", "))
			}
		case o.Result.IsError:
			failed++
			if !asJSON {
				fmt.Fprintf(s.Out, "%s: %s\n", head, o.Result.ErrorKind)
				if err := printContent(s.Out, o.Result); err != nil {
					return err
				}
			}
		default:
			if !asJSON {
				fmt.Fprintf(s.Out, "%s: ok\n", head)
				if err := printContent(s.Out, o.Result); err != nil {
					return err
				}
			}
		}
	}
	if failed > 0 && !asJSON {
		fmt.Fprintf(s.Err, "%d of %d calls failed\n", failed, len(outs))
	}
	if asked > 0 && !asJSON {
		fmt.Fprintf(s.Err, "pending: %d asking, %d waiting for answers; run again with --answer and --previous\n", asked, waiting)
	}
	return batchError(outs)
}

// batchError returns the error that carries a batch's exit code: 10 if a
// call still needs an answer, else the code of the first call that failed,
// or nil.
func batchError(outs []lathe.BatchOutcome) error {
	if q := firstQuestion(outs); q != nil {
		return &silentError{&needsInputError{q}}
	}
	for _, o := range outs {
		if o.Result != nil && o.Result.IsError {
			return &silentError{o.Err()}
		}
	}
	return nil
}

func firstQuestion(outs []lathe.BatchOutcome) *tool.Question {
	for _, o := range outs {
		if o.Question != nil {
			return o.Question
		}
	}
	return nil
}

// planJSON is the output of --plan --json. Calls and stages count from 1,
// as in the text output.
type planJSON struct {
	Stages [][]int        `json:"stages"`
	Calls  []planCallJSON `json:"calls"`
}

type planCallJSON struct {
	Call  int    `json:"call"`
	ID    string `json:"id,omitempty"`
	Name  string `json:"name"`
	Known bool   `json:"known"`
	Stage int    `json:"stage"`
	After []int  `json:"after"`
	// Summary says in words what Effects say as data.
	Summary string `json:"summary"`
	plan.Effects
	Caps []string `json:"caps,omitempty"`
}

// printPlan prints the plan of a batch: its stages, and each call's effects
// and the calls it must follow.
func printPlan(w io.Writer, e *lathe.Engine, calls []*tool.Call, asJSON bool) error {
	p := e.PlanBatch(calls)
	if asJSON {
		out := planJSON{Stages: [][]int{}, Calls: make([]planCallJSON, len(calls))}
		for _, stage := range p.Stages() {
			out.Stages = append(out.Stages, fromOne(stage))
		}
		for i, c := range p.Calls {
			_, known := e.Lookup(c.Name)
			out.Calls[i] = planCallJSON{Call: i + 1, ID: calls[i].ID, Name: c.Name, Known: known, Stage: p.Stage[i] + 1,
				After: fromOne(p.After[i]), Summary: effectSummary(known, &c.Effects), Effects: c.Effects, Caps: c.Caps}
		}
		return writeJSON(w, out)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for s, stage := range p.Stages() {
		fmt.Fprintf(tw, "stage %d\n", s+1)
		for _, i := range stage {
			c := p.Calls[i]
			_, known := e.Lookup(c.Name)
			fmt.Fprintf(tw, "  #%d\t%s\t%s", i+1, c.Name, effectSummary(known, &c.Effects))
			if len(p.After[i]) > 0 {
				refs := make([]string, len(p.After[i]))
				for k, j := range p.After[i] {
					refs[k] = "#" + strconv.Itoa(j+1)
				}
				fmt.Fprintf(tw, "\tafter %s", strings.Join(refs, ", "))
			}
			fmt.Fprintln(tw)
		}
	}
	return tw.Flush()
}

// fromOne returns indexes counted from 0 as positions counted from 1.
func fromOne(idx []int) []int {
	out := make([]int, len(idx))
	for k, i := range idx {
		out[k] = i + 1
	}
	return out
}

func effectSummary(known bool, e *plan.Effects) string {
	if !known {
		return "unknown tool: fails without running"
	}
	return e.String()
}

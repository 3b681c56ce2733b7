package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/tool"
)

func newCallCmd(g *globals) *cobra.Command {
	var (
		asJSON  bool
		answers []string
	)
	cmd := &cobra.Command{
		Use:   "call NAME [JSON | - | key=value ...]",
		Short: "Call a tool",
		Long: "Call a tool with arguments given as one JSON object, as - to read the object from standard input,\n" +
			"or as key=value pairs. Values of pairs are strings; lathe converts them to the types the tool's\n" +
			"schema declares (n=3 becomes a number where a number is expected, tags=[\"a\"] an array).\n\n" +
			"When the tool asks a question, lathe asks it on the terminal; without a terminal it prints the\n" +
			"question and exits with code 10, and the call can be repeated with --answer ID=VALUE.",
		Args: usage(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := parseArguments(args[1:], g.streams.In)
			if err != nil {
				return &usageError{err}
			}
			ans, err := parseAnswers(answers)
			if err != nil {
				return &usageError{err}
			}
			// On a terminal, a configuration that needs trust is shown
			// and the person asked.
			g.trust = trustAsk
			// Only a server that may hold the tool is started.
			g.need = args[:1]
			// The person's call approves the call; what a confined tool
			// then asks lathe's host for, where a rule says ask, is put to
			// them on the terminal.
			g.approver = terminalApprover(g.streams)
			e, err := g.openEngine()
			if err != nil {
				return err
			}
			defer e.Close()
			c := &tool.Call{ID: "cli", Name: args[0], Arguments: raw, Answers: ans}
			ask := terminalAsker(g.streams)
			// A call typed by a person is that person's approval; deny
			// rules still hold.
			ctx := policy.WithPerson(cmd.Context(), personWho)
			for {
				out := e.Call(ctx, c)
				if out.Question != nil && ask != nil {
					a, err := ask(out.Question)
					if err != nil {
						return err
					}
					if c.Answers == nil {
						c.Answers = map[string]any{}
					}
					c.Answers[out.Question.ID] = a
					continue
				}
				return printOutcome(g.streams, c, out, asJSON)
			}
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the outcome as JSON")
	cmd.Flags().StringArrayVar(&answers, "answer", nil, "answer a question the tool asked, as ID=VALUE (repeatable)")
	return cmd
}

// parseArguments builds the JSON arguments object from the command line.
func parseArguments(args []string, stdin io.Reader) (json.RawMessage, error) {
	switch {
	case len(args) == 0:
		return json.RawMessage(`{}`), nil
	case len(args) == 1 && args[0] == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("reading arguments from standard input: %w", err)
		}
		return json.RawMessage(b), nil
	case len(args) == 1 && strings.HasPrefix(strings.TrimSpace(args[0]), "{"):
		return json.RawMessage(args[0]), nil
	}
	obj := make(map[string]string, len(args))
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("argument %q: want key=value, one JSON object, or -", a)
		}
		if _, dup := obj[k]; dup {
			return nil, fmt.Errorf("argument %q given twice", k)
		}
		obj[k] = v
	}
	return json.Marshal(obj)
}

// parseAnswers reads --answer ID=VALUE flags. true and false become booleans;
// every other value is a string.
func parseAnswers(flags []string) (map[string]any, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	ans := make(map[string]any, len(flags))
	for _, f := range flags {
		id, v, ok := strings.Cut(f, "=")
		if !ok || id == "" {
			return nil, fmt.Errorf("--answer %q: want ID=VALUE", f)
		}
		switch v {
		case "true":
			ans[id] = true
		case "false":
			ans[id] = false
		default:
			ans[id] = v
		}
	}
	return ans, nil
}

// terminalAsker returns a function that asks a question on the terminal, or
// nil when standard input is not a terminal.
func terminalAsker(s Streams) func(*tool.Question) (any, error) {
	f, ok := s.In.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return newAsker(f, s.Err)
}

// newAsker returns a function that asks questions on w and reads the
// answers from in, one line each, until an answer fits the question.
func newAsker(in io.Reader, w io.Writer) func(*tool.Question) (any, error) {
	r := bufio.NewReader(in)
	return func(q *tool.Question) (any, error) {
		for {
			fmt.Fprint(w, prompt(q))
			line, err := r.ReadString('\n')
			if err != nil && line == "" {
				return nil, &needsInputError{q}
			}
			line = strings.TrimSpace(line)
			if line == "" && q.Default != nil {
				return q.Default, nil
			}
			if a, ok := parseAnswer(q, line); ok {
				return a, nil
			}
			fmt.Fprintln(w, "Please answer", hint(q))
		}
	}
}

func prompt(q *tool.Question) string {
	p := q.Text + " " + hint(q)
	if q.Default != nil {
		p += fmt.Sprintf(" [%v]", q.Default)
	}
	return p + ": "
}

func hint(q *tool.Question) string {
	switch q.Kind {
	case tool.QuestionBoolean:
		return "(yes/no)"
	case tool.QuestionSelect:
		return "(" + strings.Join(q.Options, "/") + ")"
	}
	return "(text)"
}

func parseAnswer(q *tool.Question, s string) (any, bool) {
	switch q.Kind {
	case tool.QuestionBoolean:
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, true
		case "n", "no", "false":
			return false, true
		}
		return nil, false
	case tool.QuestionSelect:
		for _, o := range q.Options {
			if o == s {
				return o, true
			}
		}
		return nil, false
	}
	return s, true
}

// printOutcome prints a result's text to standard output, an error result to
// standard error, and a question with the command that answers it; the
// returned error carries the exit code.
func printOutcome(s Streams, c *tool.Call, out *tool.Outcome, asJSON bool) error {
	if asJSON {
		if err := writeJSON(s.Out, encodeOutcome(-1, c, out, nil)); err != nil {
			return err
		}
	} else {
		// What a tool wrote reaches a terminal as text, never as the
		// terminal's commands. JSON escapes control characters itself.
		s.Out, s.Err = terminalSafe(s.Out), terminalSafe(s.Err)
	}
	switch {
	case out.Question != nil:
		q := out.Question
		if !asJSON {
			fmt.Fprintf(s.Out, "%s asks (%s): %s %s\n", c.Name, q.ID, q.Text, hint(q))
			fmt.Fprintf(s.Out, "answer with: --answer %s=VALUE\n", q.ID)
		}
		return &silentError{&needsInputError{q}}
	case out.Result.IsError:
		if !asJSON {
			fmt.Fprintf(s.Err, "%s: %s\n", out.Result.ErrorKind, out.Result.Text())
		}
		return &silentError{out.Err()}
	}
	if asJSON {
		return nil
	}
	return printContent(s.Out, out.Result)
}

func printContent(w io.Writer, r *tool.Result) error {
	for _, c := range r.Content {
		var err error
		switch c.Type {
		case tool.ContentText:
			_, err = fmt.Fprintln(w, strings.TrimSuffix(c.Text, "\n"))
		case tool.ContentImage, tool.ContentAudio:
			_, err = fmt.Fprintf(w, "[%s %s, %d bytes]\n", c.Type, c.MIMEType, len(c.Data))
		case tool.ContentResourceLink:
			_, err = fmt.Fprintf(w, "[resource link %s]\n", c.URI)
		case tool.ContentResource:
			if c.Resource != nil && c.Resource.Text != "" {
				_, err = fmt.Fprintln(w, c.Resource.Text)
			} else if c.Resource != nil {
				_, err = fmt.Fprintf(w, "[resource %s, %d bytes]\n", c.Resource.URI, len(c.Resource.Blob))
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

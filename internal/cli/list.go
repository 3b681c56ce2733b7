package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lathe-tools/lathe/provider"
	"github.com/lathe-tools/lathe/tool"
)

func newListCmd(g *globals) *cobra.Command {
	var asJSON bool
	var format string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the tools of the workspace",
		Long: "List the tools of the workspace. The tools of an upstream MCP server come from the cache of its tool\n" +
			"list when it holds them, and the server is not started; a server whose list is not cached, or whose\n" +
			"command, environment or program changed since, is started to list them. --refresh starts every\n" +
			"server and caches what it lists now.\n\n" +
			"--format prints the tools as the \"tools\" of a provider's request (openai, openai-responses,\n" +
			"anthropic, gemini) or of an MCP tools/list answer (mcp), with each schema rewritten to what the\n" +
			"provider accepts: strict where it can be, with a warning on standard error where it cannot.",
		Args: usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var f provider.Format
			if format != "" {
				if asJSON {
					return &usageError{errors.New("--json and --format: choose one")}
				}
				var err error
				if f, err = provider.ParseFormat(format); err != nil {
					return &usageError{fmt.Errorf("--format: %w", err)}
				}
			}
			e, err := g.openEngine()
			if err != nil {
				return err
			}
			defer e.Close()
			defs := e.Tools()
			if f != "" {
				ts, err := provider.Convert(f, defs, nil)
				if err != nil {
					return err
				}
				for _, w := range ts.Warnings {
					fmt.Fprintln(g.streams.Err, "lathe: warning:", w)
				}
				return writeJSON(g.streams.Out, ts)
			}
			if asJSON {
				return writeJSON(g.streams.Out, defs)
			}
			w := tabwriter.NewWriter(g.streams.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tSOURCE\tEFFECT\tSUMMARY")
			for _, d := range defs {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", d.Name, d.Source, effect(d.Annotations), d.Summary)
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the definitions as a JSON array")
	cmd.Flags().StringVar(&format, "format", "", "print the tools as a provider's request takes them: "+formatNames())
	cmd.Flags().BoolVar(&g.refresh, "refresh", false, "start every upstream MCP server to list its tools, and cache what it lists")
	return cmd
}

// formatNames lists the names --format takes.
func formatNames() string {
	var names []string
	for _, f := range provider.Formats() {
		names = append(names, string(f))
	}
	return strings.Join(names, ", ")
}

// effect renders a tool's annotations as one word for the table.
func effect(a tool.Annotations) string {
	switch {
	case a.ReadOnlyHint:
		return "read-only"
	case a.DestructiveHint != nil && !*a.DestructiveHint:
		return "additive"
	case a.DestructiveHint != nil:
		return "destructive"
	}
	return "unknown"
}

func newDescribeCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a tool's description, schemas, and what lathe makes of it",
		Long: "Show a tool's full description and schemas, and what lathe makes of it: the timeout of a call, the\n" +
			"sandbox profile of its process, its effects, and the approval a call gets, each with the place in\n" +
			"the configuration that set it (file:line) or \"default\".",
		Args: usage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			w, d, err := g.lookupTool(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			cfg, ws := w.Config, w.Dir
			eff := effectiveOf(cmd.Context(), cfg, ws, d)
			if asJSON {
				return writeJSON(g.streams.Out, struct {
					tool.Definition
					Effective effective `json:"effective"`
				}{d, eff})
			}
			if err := describe(g.streams.Out, d); err != nil {
				return err
			}
			if err := describeEffective(g.streams.Out, eff); err != nil {
				return err
			}
			declared, ok := w.Declared[d.Name]
			describeHost(g.streams.Out, cfg, d, declared, ok)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the definition as JSON")
	return cmd
}

func describe(w io.Writer, d tool.Definition) error {
	fmt.Fprintf(w, "%s (%s, %s runtime, %s)\n", d.Name, d.Source, d.Runtime, effect(d.Annotations))
	if d.Summary != "" {
		fmt.Fprintf(w, "\n%s\n", d.Summary)
	}
	if d.Description != "" && d.Description != d.Summary {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(d.Description, "\n"))
	}
	fmt.Fprintf(w, "\nInput schema:\n%s\n", indentJSON(d.InputSchema))
	if len(d.OutputSchema) > 0 {
		fmt.Fprintf(w, "\nOutput schema:\n%s\n", indentJSON(d.OutputSchema))
	}
	return nil
}

func indentJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/lathe-tools/lathe/tool"
)

// terminalHooks ask the person at the terminal what an upstream server
// asks, and show its progress; none when standard input is not a terminal.
func terminalHooks(s Streams) tool.Hooks {
	f, ok := s.In.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return tool.Hooks{}
	}
	var mu sync.Mutex // one question at a time
	r := bufio.NewReader(f)
	read := func(prompt string) (string, error) {
		fmt.Fprint(s.Err, prompt)
		line, err := r.ReadString('\n')
		if err != nil && line == "" {
			return "", err
		}
		return strings.TrimSpace(line), nil
	}
	return tool.Hooks{
		Progress: func(p tool.Progress) {
			total := ""
			if p.Total > 0 {
				total = "/" + strconv.FormatFloat(p.Total, 'f', -1, 64)
			}
			fmt.Fprintf(s.Err, "progress %s%s %s\n", strconv.FormatFloat(p.Progress, 'f', -1, 64), total, p.Message)
		},
		Elicit: func(_ context.Context, q *tool.ElicitRequest) (*tool.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			return elicitOnTerminal(s.Err, read, q)
		},
		Sample: func(_ context.Context, q *tool.SamplingRequest) (*tool.SamplingResult, error) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintln(s.Err, "A tool asks for a model's reply; you answer as the model.")
			if q.SystemPrompt != "" {
				fmt.Fprintln(s.Err, "system:", q.SystemPrompt)
			}
			for _, m := range q.Messages {
				fmt.Fprintf(s.Err, "%s: %s\n", m.Role, contentLine(&m.Content))
			}
			line, err := read("reply: ")
			if err != nil {
				return nil, fmt.Errorf("no reply: %w", err)
			}
			return &tool.SamplingResult{Role: "assistant", Model: "human", StopReason: "endTurn",
				Content: tool.Content{Type: tool.ContentText, Text: line}}, nil
		},
	}
}

func contentLine(c *tool.Content) string {
	if c.Type == tool.ContentText {
		return c.Text
	}
	return fmt.Sprintf("[%s %s]", c.Type, c.MIMEType)
}

// elicitOnTerminal asks for each field of the requested schema in turn. An
// empty answer takes the field's default, or leaves out a field that is not
// required; end of input cancels.
func elicitOnTerminal(w io.Writer, read func(string) (string, error), q *tool.ElicitRequest) (*tool.ElicitResult, error) {
	cancel := &tool.ElicitResult{Action: tool.ElicitCancel}
	fmt.Fprintln(w, q.Message)
	if q.Mode == "url" {
		fmt.Fprintln(w, "Open:", q.URL)
		a, err := read("Done? (yes/no): ")
		if err != nil {
			return cancel, nil
		}
		if yes(a) {
			return &tool.ElicitResult{Action: tool.ElicitAccept}, nil
		}
		return &tool.ElicitResult{Action: tool.ElicitDecline}, nil
	}
	a, err := read("Answer? (yes/no): ")
	if err != nil {
		return cancel, nil
	}
	if !yes(a) {
		return &tool.ElicitResult{Action: tool.ElicitDecline}, nil
	}
	var sch struct {
		Properties map[string]struct {
			Type        string                `json:"type"`
			Title       string                `json:"title"`
			Description string                `json:"description"`
			Enum        []any                 `json:"enum"`
			Default     any                   `json:"default"`
			Items       *struct{ Enum []any } `json:"items"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if len(q.Schema) > 0 {
		if err := json.Unmarshal(q.Schema, &sch); err != nil {
			return nil, fmt.Errorf("requested schema: %w", err)
		}
	}
	content := map[string]any{}
	// Required fields first, then the others, each group by name.
	names := slices.Sorted(maps.Keys(sch.Properties))
	slices.SortStableFunc(names, func(a, b string) int {
		ra, rb := slices.Contains(sch.Required, a), slices.Contains(sch.Required, b)
		switch {
		case ra && !rb:
			return -1
		case rb && !ra:
			return 1
		}
		return 0
	})
	for _, name := range names {
		p := sch.Properties[name]
		required := slices.Contains(sch.Required, name)
		for {
			prompt := name
			if p.Title != "" {
				prompt = p.Title + " (" + name + ")"
			}
			if p.Description != "" {
				prompt += " — " + p.Description
			}
			if len(p.Enum) > 0 {
				prompt += fmt.Sprintf(" %v", p.Enum)
			}
			if p.Default != nil {
				prompt += fmt.Sprintf(" [%v]", p.Default)
			}
			line, err := read(prompt + ": ")
			if err != nil {
				return cancel, nil
			}
			if line == "" {
				if p.Default != nil {
					content[name] = p.Default
					break
				}
				if !required {
					break
				}
				fmt.Fprintln(w, "An answer is required.")
				continue
			}
			v, err := fieldValue(p.Type, line)
			if err != nil {
				fmt.Fprintln(w, err)
				continue
			}
			if len(p.Enum) > 0 && !slices.ContainsFunc(p.Enum, func(e any) bool { return fmt.Sprint(e) == line }) {
				fmt.Fprintf(w, "Please answer one of %v.\n", p.Enum)
				continue
			}
			content[name] = v
			break
		}
	}
	return &tool.ElicitResult{Action: tool.ElicitAccept, Content: content}, nil
}

func yes(s string) bool {
	switch strings.ToLower(s) {
	case "y", "yes", "true":
		return true
	}
	return false
}

func fieldValue(typ, s string) (any, error) {
	switch typ {
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, fmt.Errorf("please answer yes or no")
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("please answer a whole number")
		}
		return n, nil
	case "number":
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("please answer a number")
		}
		return n, nil
	case "array":
		var out []string
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
		return out, nil
	}
	return s, nil
}

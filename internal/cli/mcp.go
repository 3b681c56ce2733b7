package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/tool"
)

// upstream is what lathe keeps of the MCP servers of one engine: the pool,
// and who wants to hear that their tools changed (lathe serve does). It is
// found by engine, so that the commands need not carry it.
type upstream struct {
	pool *mcp.Pool

	mu        sync.Mutex
	listeners []func()
	// ask answers what a server asks when the call that caused it brings no
	// hooks of its own: on a terminal, the person is asked. lathe serve
	// turns it off, since its terminal is not the person's.
	ask tool.Hooks
}

var upstreams sync.Map // *lathe.Engine → *upstream

func upstreamOf(e *lathe.Engine) *upstream {
	u, _ := upstreams.Load(e)
	up, _ := u.(*upstream)
	return up
}

// onToolsChanged calls f whenever an upstream server of e changes its tools.
func onToolsChanged(e *lathe.Engine, f func()) {
	if u := upstreamOf(e); u != nil {
		u.mu.Lock()
		u.listeners = append(u.listeners, f)
		u.mu.Unlock()
	}
}

// quietUpstream stops the servers of e from asking on lathe's terminal.
func quietUpstream(e *lathe.Engine) {
	if u := upstreamOf(e); u != nil {
		u.mu.Lock()
		u.ask = tool.Hooks{}
		u.mu.Unlock()
	}
}

func (u *upstream) changed() {
	u.mu.Lock()
	ls := slices.Clone(u.listeners)
	u.mu.Unlock()
	for _, f := range ls {
		f()
	}
}

// hooks are the pool's fallback hooks; each looks up u.ask at the time of
// the request, so that quietUpstream takes effect after the pool exists.
func (u *upstream) hooks() tool.Hooks {
	get := func() tool.Hooks {
		u.mu.Lock()
		defer u.mu.Unlock()
		return u.ask
	}
	return tool.Hooks{
		Progress: func(p tool.Progress) {
			if h := get(); h.Progress != nil {
				h.Progress(p)
			}
		},
		Elicit: func(ctx context.Context, r *tool.ElicitRequest) (*tool.ElicitResult, error) {
			if h := get(); h.Elicit != nil {
				return h.Elicit(ctx, r)
			}
			return nil, fmt.Errorf("the tool asks for input (%s), and there is no terminal to ask on", r.Message)
		},
		Sample: func(ctx context.Context, r *tool.SamplingRequest) (*tool.SamplingResult, error) {
			if h := get(); h.Sample != nil {
				return h.Sample(ctx, r)
			}
			return nil, fmt.Errorf("the tool asks for a model's completion, and there is no terminal to ask on")
		},
	}
}

// loadMCP starts the [mcp.NAME] servers of cfg and registers their tools in
// e, marking their names known for cfg.Unused. The engine closes the pool.
func (g *globals) loadMCP(e *lathe.Engine, cfg *config.Config, ws string, known map[string]bool) error {
	servers, err := cfg.MCPServers(os.LookupEnv)
	if err != nil {
		return &configError{err}
	}
	warn := func(err error) { fmt.Fprintln(g.streams.Err, "lathe: warning:", err) }
	var skipped []config.MCPServer
	cfgs := make([]mcp.Config, 0, len(servers))
	for _, s := range servers {
		if s.Unavailable != nil {
			warn(fmt.Errorf("%w (optional, skipped)", s.Unavailable))
			skipped = append(skipped, s)
			continue
		}
		dir := s.Cwd
		if dir == "" {
			dir = ws
		} else if !filepath.IsAbs(dir) {
			dir = filepath.Join(ws, dir)
		}
		cfgs = append(cfgs, mcp.Config{
			Name: s.Name, Command: s.Command, Env: s.Env, PassEnv: s.Permissions.Env, Dir: dir,
			URL: s.URL, Headers: s.Headers, Prefix: s.Prefix, Allow: s.Allow, Deny: s.Deny,
			Timeout: s.Timeout, StartupTimeout: s.StartupTimeout, Optional: s.Optional,
			Sandbox: mcpSandbox(cfg, s, ws, dir),
		})
	}
	defer func() { skippedTables(cfg, skipped, known, warn) }()
	if len(cfgs) == 0 {
		return nil
	}
	u := &upstream{ask: terminalHooks(g.streams)}
	pool, err := mcp.Open(context.Background(), e, cfgs, mcp.Options{
		Hooks:    u.hooks(),
		Adjust:   cfg.Apply,
		OnChange: u.changed,
		Warn:     warn,
		OnClose:  func() { upstreams.Delete(e) },
	})
	if errors.Is(err, mcp.ErrCollision) {
		return &configError{err}
	}
	if err != nil {
		return &tool.Error{Kind: tool.KindRuntimeFailure, Stage: "load", Err: err}
	}
	u.pool = pool
	upstreams.Store(e, u)
	for _, name := range pool.Skipped() {
		if i := slices.IndexFunc(servers, func(s config.MCPServer) bool { return s.Name == name }); i >= 0 {
			skipped = append(skipped, servers[i])
		}
	}
	for _, n := range pool.Names() {
		known[n] = true
	}
	if !slices.ContainsFunc(e.Tools(), func(d tool.Definition) bool { return strings.HasPrefix(d.Source, "mcp.") }) {
		// The engine closes the pool through its tools; with none, nothing
		// would.
		pool.Close()
	}
	return nil
}

// skippedTables accepts, with a warning, each [tools.NAME] table that names
// no known tool but would name one of a skipped optional server, under its
// prefix: which tools such a server has cannot be known, and a server lathe
// can do without must not stop it by its absence.
func skippedTables(cfg *config.Config, skipped []config.MCPServer, known map[string]bool, warn func(error)) {
	for _, name := range slices.Sorted(maps.Keys(cfg.Tools)) {
		if known[name] {
			continue
		}
		for _, s := range skipped {
			if strings.HasPrefix(name, s.ToolPrefix()) {
				known[name] = true
				warn(fmt.Errorf("%s: [tools.%s] is not checked: it may name a tool of the optional MCP server %s, which is skipped",
					cfg.Tools[name].Pos, name, s.Name))
				break
			}
		}
	}
}

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

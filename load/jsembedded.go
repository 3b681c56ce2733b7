package load

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/internal/statedir"
	"github.com/lathe-tools/lathe/runtime/js"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/trust"
)

// JSRuntime is the runtime name of tools run by the embedded engine.
const JSRuntime = "js"

// embeddedTool makes the runtime of a trusted tool in the embedded engine.
// Its definition is the manifest's, or what the default export says, read
// without calling execute and cached by the content of the files the tool
// is built from.
func (l *localLoader) embeddedTool(b *builtJS, cacheDir string, perms config.HostPermissions, profile config.SandboxProfile) (tool.Tool, error) {
	h, err := l.hostFor(b.Name, "tools."+b.Name, l.toolPos(b.Name), perms, profile)
	if err != nil {
		return tool.Tool{}, err
	}
	opts := js.Options{Host: h, File: b.Entry, SourceMap: b.Result.SourceMap, Logger: l.log}
	if t := l.cfg.Tools[b.Name]; t != nil {
		opts.ToolOptions = t.Options
	}
	var d js.Definition
	if m := b.Manifest; m != nil {
		d = js.Definition{Description: m.Description, InputSchema: m.InputSchema, OutputSchema: m.OutputSchema, Permissions: m.Permissions}
		if m.Annotations != nil {
			d.Annotations = *m.Annotations
		}
	} else if d, err = l.describeJS(b, cacheDir, opts); err != nil {
		return tool.Tool{}, err
	}
	rt, err := js.New(b.Result.Code, opts)
	if err != nil {
		return tool.Tool{}, err
	}
	def := tool.Definition{Name: b.Name, Summary: d.Summary, Description: d.Description, InputSchema: d.InputSchema,
		OutputSchema: d.OutputSchema, Annotations: d.Annotations, Source: "local", Runtime: JSRuntime}
	// A schema the export leaves out may come back as JSON null.
	for _, s := range []*json.RawMessage{&def.InputSchema, &def.OutputSchema} {
		if string(*s) == "null" {
			*s = nil
		}
	}
	if def.Summary == "" {
		def.Summary = summaryOf(def.Description)
	}
	if len(def.InputSchema) == 0 {
		def.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	l.declarePerms(b.Name, d.Permissions)
	return tool.Tool{Definition: def, Runtime: rt}, nil
}

// describeJS reads the tool's definition, from the cache when the same
// files were described before.
func (l *localLoader) describeJS(b *builtJS, cacheDir string, opts js.Options) (js.Definition, error) {
	var d js.Definition
	p := ""
	if cacheDir != "" {
		// Keyed by the bundle, which changes with every input and with
		// esbuild's output, and by the format of the record.
		p = filepath.Join(cacheDir, "def-"+trust.Sum(append([]byte("lathe-definition-1\x00"), b.Result.Code...))+".json")
		if data, err := statedir.ReadPrivate(p, 16<<20); err == nil && json.Unmarshal(data, &d) == nil {
			return d, nil
		}
	}
	ctx, cancel := context.WithTimeout(l.ctx, describeTimeout)
	defer cancel()
	opts.Host = nil // describing reaches nothing
	d, err := js.Describe(ctx, b.Result.Code, opts)
	if err != nil {
		return d, err
	}
	if p != "" {
		if data, err := json.Marshal(d); err == nil {
			// A cache that cannot be written costs the next load time.
			_ = statedir.WriteFile(p, data)
		}
	}
	return d, nil
}

// summaryOf is the first line of a description, cut to a length a list
// shows well, for a tool that gives no summary of its own.
func summaryOf(desc string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(desc), "\n")
	line = strings.TrimSpace(line)
	const limit = 160
	if r := []rune(line); len(r) > limit {
		line = string(r[:limit-1]) + "…"
	}
	return line
}

package codemode

import (
	"fmt"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// transpile turns a script into the JavaScript the engine runs. A script is
// one file with no imports (there is nothing to import: tools come as the
// tools global), so esbuild's Transform of the one file is all it takes;
// TypeScript loses its types. JavaScript is checked by esbuild too, so that
// a syntax error is reported the same way, with its line, before anything
// runs. A TypeScript script comes with its source map, so that an error it
// throws names the script's own line.
func transpile(code, language string) (string, []byte, error) {
	loader := api.LoaderTS
	switch language {
	case "", "typescript", "ts":
	case "javascript", "js":
		loader = api.LoaderJS
	default:
		return "", nil, fmt.Errorf("unknown language %q (typescript or javascript)", language)
	}
	// The script is the body of an async function (it awaits and returns
	// at its top level), so it is transpiled as one, the opening on its
	// first line so that its lines keep their numbers; the engine runs the
	// body it is given as a function of its own, which calls this one.
	res := api.Transform(scriptOpen+code+scriptClose, api.TransformOptions{
		Loader:     loader,
		Target:     api.ES2020,
		Sourcefile: "script",
		Sourcemap:  api.SourceMapExternal,
	})
	if len(res.Errors) > 0 {
		var b strings.Builder
		for i, m := range res.Errors {
			if i > 0 {
				b.WriteString("; ")
			}
			if l := m.Location; l != nil {
				col := l.Column
				if l.Line == 1 {
					col -= len(scriptOpen)
				}
				fmt.Fprintf(&b, "line %d column %d: ", l.Line, max(col, 0)+1)
			}
			b.WriteString(m.Text)
		}
		return "", nil, fmt.Errorf("%s", b.String())
	}
	if loader == api.LoaderJS {
		// JavaScript runs as it was written, so that the line and column
		// of a runtime error are the script's own; esbuild only checked
		// it.
		return code, nil, nil
	}
	return string(res.Code) + "return await " + scriptName + "();\n", res.Map, nil
}

const (
	scriptName  = "__lathe_script"
	scriptOpen  = "async function " + scriptName + "() {"
	scriptClose = "\n}\n"
)

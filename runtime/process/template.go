package process

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// template is a command line whose elements may hold {name} placeholders.
//
// Without a shell, each element is expanded on its own: a placeholder takes
// the argument's value as text, and the element stays one element of argv
// whatever the value holds, so no value is ever parsed by a shell. An element
// whose placeholders all name absent arguments is left out, so that an
// optional argument's flag disappears with it ("--author={author}").
//
// With a shell, the command is one script. Each placeholder becomes a
// reference to a positional parameter ("${1}", quoted where the script does
// not quote it), and the values are passed as those parameters: the shell
// expands them as data, never as code.
type template struct {
	shell bool
	elems []tmplElem
	// names lists the distinct placeholder names in order of appearance;
	// in a shell script, name i is positional parameter i+1.
	names []string
}

type tmplElem struct {
	parts []tmplPart
	vars  bool // some part is a placeholder
}

type tmplPart struct {
	lit  string
	name string // a placeholder when not empty
}

// parseTemplate reads argv. "{name}", where name is a letter or "_" followed
// by letters, digits, "_" or "-", is a placeholder, unless its "{" follows
// another: "{{name}}" and "{{name}" are text. Every brace that is not part of
// a placeholder is kept as written, so that "find . -exec cat {} ;", JSON
// ('{"k": {name}}' has a placeholder) and the templates of Go, Jinja and
// Mustache ("go list -f {{.Dir}}", "{{end}}") need no escape and lose no
// brace.
func parseTemplate(argv []string, shell bool) (*template, error) {
	t := &template{shell: shell}
	seen := map[string]bool{}
	for _, a := range argv {
		var e tmplElem
		var lit strings.Builder
		for i := 0; i < len(a); {
			if a[i] != '{' {
				lit.WriteByte(a[i])
				i++
				continue
			}
			// A run of opening braces is text: a placeholder's brace
			// is never doubled.
			if run := len(a[i:]) - len(strings.TrimLeft(a[i:], "{")); run > 1 {
				lit.WriteString(a[i : i+run])
				i += run
				continue
			}
			end := strings.IndexByte(a[i:], '}')
			if end < 0 || !placeholderName(a[i+1:i+end]) {
				lit.WriteByte('{')
				i++
				continue
			}
			name := a[i+1 : i+end]
			if lit.Len() > 0 {
				e.parts = append(e.parts, tmplPart{lit: lit.String()})
				lit.Reset()
			}
			e.parts = append(e.parts, tmplPart{name: name})
			e.vars = true
			if !seen[name] {
				seen[name] = true
				t.names = append(t.names, name)
			}
			i += end + 1
		}
		if lit.Len() > 0 || len(e.parts) == 0 {
			e.parts = append(e.parts, tmplPart{lit: lit.String()})
		}
		t.elems = append(t.elems, e)
	}
	if shell && len(t.elems) != 1 {
		return nil, fmt.Errorf("with shell = true the command must be one string, the script; it has %d", len(t.elems))
	}
	if shell {
		if _, err := t.script(); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func placeholderName(s string) bool {
	if s == "" || !(s[0] == '_' || 'a' <= s[0] && s[0] <= 'z' || 'A' <= s[0] && s[0] <= 'Z') {
		return false
	}
	for _, c := range []byte(s) {
		if !(c == '_' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// script returns the shell script with each placeholder replaced by its
// positional parameter. It tracks the shell's quoting as it goes: outside
// quotes the reference is double-quoted, inside double quotes it is already
// quoted, and inside single quotes nothing expands, which is an error.
func (t *template) script() (string, error) {
	var b strings.Builder
	inSingle, inDouble, escaped := false, false, false
	index := map[string]int{}
	for i, n := range t.names {
		index[n] = i + 1
	}
	for _, p := range t.elems[0].parts {
		if p.name != "" {
			switch {
			case inSingle:
				return "", fmt.Errorf("placeholder {%s} is inside single quotes, where the shell expands nothing; write it bare: lathe quotes each value itself", p.name)
			case inDouble:
				fmt.Fprintf(&b, "${%d}", index[p.name])
			default:
				fmt.Fprintf(&b, `"${%d}"`, index[p.name])
			}
			escaped = false
			continue
		}
		for _, c := range []byte(p.lit) {
			b.WriteByte(c)
			switch {
			case escaped:
				escaped = false
			case c == '\\' && !inSingle:
				escaped = true
			case c == '\'' && !inDouble:
				inSingle = !inSingle
			case c == '"' && !inSingle:
				inDouble = !inDouble
			}
		}
	}
	return b.String(), nil
}

// expand returns argv for a call with args. For a shell template it returns
// the script's positional parameters, in order.
func (t *template) expand(args map[string]any) []string {
	if t.shell {
		vals := make([]string, len(t.names))
		for i, n := range t.names {
			if v, ok := args[n]; ok {
				vals[i] = argText(v)
			}
		}
		return vals
	}
	argv := make([]string, 0, len(t.elems))
	for _, e := range t.elems {
		if !e.vars {
			argv = append(argv, e.parts[0].lit)
			continue
		}
		var b strings.Builder
		present := false
		for _, p := range e.parts {
			if p.name == "" {
				b.WriteString(p.lit)
				continue
			}
			if v, ok := args[p.name]; ok {
				present = true
				b.WriteString(argText(v))
			}
		}
		if present {
			argv = append(argv, b.String())
		}
	}
	return argv
}

// argText renders an argument's value as one command-line word: a string as
// it is, a number or a boolean in its JSON form, null as nothing, an array or
// an object as compact JSON.
func argText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// shellQuote quotes s for a POSIX shell, for display.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r == '=' || r == ':' || r == ',' || r == '+' || r == '@' ||
			'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

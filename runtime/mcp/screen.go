package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxToolDepth bounds how deeply the definition of an upstream tool may
// nest, in JSON arrays and objects, the tool's own object included. Real
// schemas stay far below it; a deeper one exists to exhaust a decoder or a
// recursive schema compiler, and the tool is left out.
const MaxToolDepth = 256

// rejection is an upstream tool that lathe left out of a tools/list answer
// before the SDK saw it, and why.
type rejection struct {
	name string // its name on the server; "" when it has none lathe can read
	pos  int    // its index in the answer
	err  error
}

func (r rejection) Error() string {
	if r.name == "" {
		return fmt.Sprintf("tool #%d of the list left out: %v", r.pos, r.err)
	}
	return fmt.Sprintf("tool %q left out: %v", r.name, r.err)
}

// screen returns msg, one message from the server, with the tools that
// would spoil it left out, when it answers a tools/list request of this
// session; any other message comes back as it is. A tool is left out when
// its definition nests deeper than [MaxToolDepth] or does not decode as an
// MCP tool; each is recorded (see [capture.takeRejected]). The rest of the
// message is kept byte for byte.
func (c *capture) screen(msg []byte) (out []byte) {
	// It runs on the goroutine that reads the connection, where a panic
	// would end the process: a message it cannot screen passes as it came,
	// for the SDK to take or refuse.
	defer func() {
		if recover() != nil {
			out = msg
		}
	}()
	// Only while a listing is under way: other messages pass untouched.
	// (No quicker test of the bytes, such as looking for "tools": a key may
	// be written with escapes.)
	if !c.listing() {
		return msg
	}
	start := skipSpace(msg, 0)
	var idRaw, result []byte
	resultAt := 0
	if err := members(msg, start, func(key string, vs, ve int) {
		switch key {
		case "id":
			idRaw = msg[vs:ve]
		case "result":
			result, resultAt = msg[vs:ve], vs
		}
	}); err != nil || result == nil || !c.isPending(idRaw) {
		return msg
	}
	toolsStart, toolsEnd := -1, -1
	if members(result, 0, func(key string, vs, ve int) {
		if key == "tools" && result[vs] == '[' {
			toolsStart, toolsEnd = vs, ve
		}
	}) != nil || toolsStart < 0 {
		return msg
	}
	tools := result[toolsStart:toolsEnd]
	var (
		kept     [][]byte
		rejected []rejection
		i        int
	)
	err := elements(tools, func(vs, ve, depth int) {
		elem := tools[vs:ve]
		if err := checkTool(elem, depth); err != nil {
			rejected = append(rejected, rejection{name: toolName(elem), pos: i, err: err})
		} else {
			kept = append(kept, elem)
		}
		i++
	})
	if err != nil || len(rejected) == 0 {
		return msg
	}
	c.reject(rejected)
	var b bytes.Buffer
	b.Grow(len(msg))
	b.Write(msg[:resultAt+toolsStart])
	b.WriteByte('[')
	b.Write(bytes.Join(kept, []byte{','}))
	b.WriteByte(']')
	b.Write(msg[resultAt+toolsEnd:])
	return b.Bytes()
}

// checkTool says what is wrong with one tool of a list, or nil.
func checkTool(elem []byte, depth int) error {
	if depth > MaxToolDepth {
		return fmt.Errorf("its definition nests deeper than %d levels", MaxToolDepth)
	}
	var t sdk.Tool
	if err := json.Unmarshal(elem, &t); err != nil {
		return fmt.Errorf("its definition is not an MCP tool: %v", err)
	}
	return nil
}

// toolName reads the name of a tool whose definition may not decode.
func toolName(elem []byte) string {
	var name string
	members(elem, 0, func(key string, vs, ve int) {
		if key == "name" {
			json.Unmarshal(elem[vs:ve], &name)
		}
	})
	return name
}

// The functions below walk JSON without building it and without recursion,
// so that no nesting, however deep, costs more than a counter and a stack
// of brackets.

var errSyntax = errors.New("malformed JSON")

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string that starts at b[i].
func stringEnd(b []byte, i int) (int, error) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return 0, errSyntax
}

// value returns the end of the value that starts at b[i] and its depth:
// 0 for a scalar, 1 for an empty object or array, one more per level. It
// checks the brackets and strings, not every rule of JSON: what passes is
// decoded by encoding/json afterwards.
func value(b []byte, i int) (end, depth int, err error) {
	var stack []byte
	for {
		if i >= len(b) {
			return 0, 0, errSyntax
		}
		switch c := b[i]; c {
		case '"':
			if i, err = stringEnd(b, i); err != nil {
				return 0, 0, err
			}
		case '{', '[':
			stack = append(stack, c)
			depth = max(depth, len(stack))
			i++
		case '}', ']':
			if len(stack) == 0 || (c == '}') != (stack[len(stack)-1] == '{') {
				return 0, 0, errSyntax
			}
			stack = stack[:len(stack)-1]
			i++
		default:
			i++
		}
		if len(stack) == 0 {
			// A scalar ends at the next delimiter.
			if depth == 0 && b[i-1] != '"' {
				for i < len(b) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(b[i])) {
					i++
				}
			}
			return i, depth, nil
		}
	}
}

// members calls f with the key and value span of each member of the object
// that starts at b[i] (after any space).
func members(b []byte, i int, f func(key string, vs, ve int)) error {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return errSyntax
	}
	return items(b, i, '}', func(i int) (int, error) {
		if i >= len(b) || b[i] != '"' {
			return 0, errSyntax
		}
		ke, err := stringEnd(b, i)
		if err != nil {
			return 0, err
		}
		key := string(b[i+1 : ke-1])
		if bytes.IndexByte(b[i:ke], '\\') >= 0 && json.Unmarshal(b[i:ke], &key) != nil {
			return 0, errSyntax
		}
		i = skipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return 0, errSyntax
		}
		vs := skipSpace(b, i+1)
		ve, _, err := value(b, vs)
		if err != nil {
			return 0, err
		}
		f(key, vs, ve)
		return ve, nil
	})
}

// elements calls f with the span and depth of each element of the array
// b, which starts with '['.
func elements(b []byte, f func(vs, ve, depth int)) error {
	return items(b, 0, ']', func(vs int) (int, error) {
		ve, depth, err := value(b, vs)
		if err != nil {
			return 0, err
		}
		f(vs, ve, depth)
		return ve, nil
	})
}

// items calls item at the start of each item of the object or array whose
// opening bracket is b[open], up to the closing bracket end; item returns
// where its item ends. It reads the commas and the brackets, which members
// and elements share.
func items(b []byte, open int, end byte, item func(i int) (int, error)) error {
	i := skipSpace(b, open+1)
	if i < len(b) && b[i] == end {
		return nil
	}
	for {
		e, err := item(i)
		if err != nil {
			return err
		}
		i = skipSpace(b, e)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == end {
			return nil
		}
		return errSyntax
	}
}

package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/internal/jsonscan"
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
	start := jsonscan.SkipSpace(msg, 0)
	var idRaw, result []byte
	resultAt := 0
	if err := jsonscan.Members(msg, start, func(key string, vs, ve int) {
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
	if jsonscan.Members(result, 0, func(key string, vs, ve int) {
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
	err := jsonscan.Elements(tools, func(vs, ve, depth int) {
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
	jsonscan.Members(elem, 0, func(key string, vs, ve int) {
		if key == "name" {
			json.Unmarshal(elem[vs:ve], &name)
		}
	})
	return name
}

package schema

import "fmt"

// A schema may come from a process that describes itself or from an upstream
// MCP server, so Compile treats it as hostile input: whatever it holds, Compile
// ends, and a schema that would make a later call run without end, or grow
// without bound, is refused here rather than discovered during a call.

// MaxDepth is how deeply a schema's JSON may nest: objects and arrays,
// counted from the schema itself at depth 1. Each level of nested properties
// takes two ("properties", then the property's schema), so 128 leaves room
// for 63 levels of nested objects, far beyond any tool's real arguments,
// while the walks over a schema at Compile stay shallow. A deeper schema is
// refused with an error naming the byte offset where it went too deep.
const MaxDepth = 128

// MaxObjects bounds how many JSON objects, that is schemas and the maps that
// hold them, one schema may contain. The validator's compiler spends time
// that grows with the square of that number on some shapes (a long chain of
// references takes seconds at a few thousand), so without a bound one hostile
// schema would stall the registration of every tool. Large real schemas hold
// a few hundred.
const MaxObjects = 4096

// MaxDefaultValues bounds how many JSON values (objects, arrays and scalars,
// counted one each) a single default may add to a call's arguments, counting
// the defaults that are filled in inside it in turn. A real default is a few
// values; the bound keeps a schema from making every call build a huge value.
const MaxDefaultValues = 4096

// checkNesting refuses JSON nested deeper than MaxDepth or holding more than
// MaxObjects objects. It reads only the brackets outside strings, so it is
// cheap and cannot itself recurse.
func checkNesting(raw []byte) error {
	depth, objects := 0, 0
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			if c == '{' {
				objects++
				if objects > MaxObjects {
					return fmt.Errorf("schema: more than %d objects (at byte offset %d); a tool's schema never needs that many", MaxObjects, i)
				}
			}
			depth++
			if depth > MaxDepth {
				return fmt.Errorf("schema: nested deeper than %d levels (at byte offset %d); a tool's schema never needs that many", MaxDepth, i)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}

// checkDefaults refuses defaults that would never finish filling in, or that
// would grow too large, when ApplyDefaults runs.
//
// ApplyDefaults fills an absent property with a copy of its default and then
// fills the defaults inside that copy. Filling one default therefore always
// fills the same others, whatever the call's arguments hold: those of the
// places inside the default's value where a property with a default of its
// own is absent. That relation is a graph over the defaults, known at Compile.
// A cycle in it, as in {"properties":{"a":{"$ref":"#","default":{}}}}, means
// an object that holds itself without end; it is refused, as is a default that
// adds more than MaxDefaultValues values once the defaults below it are in.
func checkDefaults(nodes []*node) error {
	c := defaultChecker{size: map[*propDefault]int{}}
	for _, n := range nodes {
		for i := range n.defaults {
			if _, err := c.expand(n, &n.defaults[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

type defaultChecker struct {
	// size holds how many values filling each default in adds, once known,
	// and -1 while the default is being expanded.
	size map[*propDefault]int
}

// expand returns how many values filling d in at an object of node n adds.
func (c *defaultChecker) expand(n *node, d *propDefault) (int, error) {
	if k, ok := c.size[d]; ok && k < 0 {
		return 0, fmt.Errorf("schema: the default at %s never ends: filling it in fills it in again inside itself (a $ref back to an enclosing schema); give the inner property no default, or make it required", d.at)
	} else if ok {
		return k, nil
	}
	c.size[d] = -1
	size, err := c.walk(n.child(d.name), d.value, countValues(d.value))
	if err != nil {
		return 0, err
	}
	if size > MaxDefaultValues {
		return 0, fmt.Errorf("schema: the default at %s grows to more than %d values once the defaults inside it are filled in", d.at, MaxDefaultValues)
	}
	c.size[d] = size
	return size, nil
}

// walk follows fillValue over v, the value of a default, at node n and adds
// to size what the defaults it fills in add.
func (c *defaultChecker) walk(n *node, v any, size int) (int, error) {
	if n == nil || !n.fill || size > MaxDefaultValues {
		return size, nil
	}
	switch x := v.(type) {
	case map[string]any:
		for i := range n.defaults {
			d := &n.defaults[i]
			if _, ok := x[d.name]; ok {
				continue
			}
			k, err := c.expand(n, d)
			if err != nil {
				return 0, err
			}
			size += k
		}
		var err error
		for name, e := range x {
			if size, err = c.walk(n.child(name), e, size); err != nil {
				return 0, err
			}
		}
	case []any:
		var err error
		for i, e := range x {
			if size, err = c.walk(n.item(i), e, size); err != nil {
				return 0, err
			}
		}
	}
	return size, nil
}

// countValues counts the values in v, containers and scalars alike.
func countValues(v any) int {
	switch x := v.(type) {
	case map[string]any:
		n := 1
		for _, e := range x {
			n += countValues(e)
		}
		return n
	case []any:
		n := 1
		for _, e := range x {
			n += countValues(e)
		}
		return n
	}
	return 1
}

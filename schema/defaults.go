package schema

// ApplyDefaults fills in the absent properties of v that have a default in the
// schema, in nested objects and array items too, and in defaults it has just
// filled in. A property that is present, even as null, keeps its value.
//
// Objects are changed in place and v is returned; the bool reports whether
// anything changed. Each default is copied before it goes into v, so a later
// change to v never reaches the schema. Which places have defaults is known
// from Compile, so a schema without them costs one check.
func (s *Schema) ApplyDefaults(v any) (any, bool) {
	if s.load() != nil {
		return v, false
	}
	return v, s.root.fillValue(v)
}

func (n *node) fillValue(v any) bool {
	if n == nil || !n.fill {
		return false
	}
	changed := false
	switch x := v.(type) {
	case map[string]any:
		for _, d := range n.defaults {
			if _, ok := x[d.name]; !ok {
				x[d.name] = clone(d.value)
				changed = true
			}
		}
		if n.addl != nil && n.addl.fill {
			for k, e := range x {
				if n.child(k).fillValue(e) {
					changed = true
				}
			}
			return changed
		}
		for _, p := range n.fillProps {
			if e, ok := x[p.name]; ok && p.n.fillValue(e) {
				changed = true
			}
		}
	case []any:
		for i, e := range x {
			if n.item(i).fillValue(e) {
				changed = true
			}
		}
	}
	return changed
}

// clone deep-copies a decoded JSON value; scalars are immutable and shared.
func clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = clone(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = clone(e)
		}
		return a
	}
	return v
}

package schema

import (
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// typeSet is a set of JSON types. Integers have a bit of their own so that
// "number" (both bits) and "integer" (one) can be told apart.
type typeSet uint8

const (
	tNull typeSet = 1 << iota
	tBoolean
	tObject
	tArray
	tFraction // a number that is not an integer
	tInteger
	tString

	tNumber  = tFraction | tInteger
	tAll     = tNull | tBoolean | tObject | tArray | tNumber | tString
	tNonText = tAll &^ tString
)

func typeBit(name string) typeSet {
	switch name {
	case "null":
		return tNull
	case "boolean":
		return tBoolean
	case "object":
		return tObject
	case "array":
		return tArray
	case "number":
		return tNumber
	case "integer":
		return tInteger
	case "string":
		return tString
	}
	return 0
}

// typeOfValue is the type of a decoded value; a number counts as both number
// kinds because whether it is integral does not matter for what follows.
func typeOfValue(v any) typeSet {
	switch v.(type) {
	case nil:
		return tNull
	case bool:
		return tBoolean
	case map[string]any:
		return tObject
	case []any:
		return tArray
	case string:
		return tString
	}
	return tNumber
}

// A node is what Coerce and ApplyDefaults need to know about one place in a
// value: the types the schema allows there and the nodes of the places below.
// Nodes are built once, at Compile, from the compiled schema, so a call only
// walks the value and the few nodes that matter.
//
// A node may allow more than the schema does (it ignores not, if/then/else,
// patternProperties, dynamic references …) but never less, so when a node
// rules out strings the schema does too. That is what makes coercion safe: it
// only ever replaces a string the schema would have rejected.
type node struct {
	types typeSet
	// props holds the nodes of named properties; addl the node of any other
	// property, nil when nothing is known about them.
	props map[string]*node
	addl  *node
	// prefix holds the nodes of the first array items, items the node of the
	// rest.
	prefix []*node
	items  *node

	// coerceHere: a string here may be replaced by the value it encodes.
	// coerce: that may happen here or below.
	coerceHere bool
	coerce     bool
	// fill: some property here or below has a default.
	fill bool

	// The properties to visit, precomputed so that the walks allocate nothing
	// and skip the properties that cannot change.
	coerceProps []namedNode
	fillProps   []namedNode
	defaults    []propDefault
}

type namedNode struct {
	name string
	n    *node
}

type propDefault struct {
	name  string
	value any
	// at is where the default is written in the schema, for messages.
	at string
}

// builder turns compiled schemas into nodes.
type builder struct {
	memo  map[string]*node
	types map[*jsonschema.Schema]typeSet
	nodes []*node
}

// anyNode allows everything and has nothing below; it stands for places the
// schema says nothing about.
var anyNode = &node{types: tAll}

func buildTree(root *jsonschema.Schema) (*node, error) {
	b := &builder{memo: map[string]*node{}, types: map[*jsonschema.Schema]typeSet{}}
	n := b.build(conj(root))
	b.finish()
	if err := checkDefaults(b.nodes); err != nil {
		return nil, err
	}
	return n, nil
}

// flatten expands s into the conjunction of schemas that all apply at its
// place: s itself, what it references, and its allOf parts. (Before draft
// 2019-09 the keywords beside $ref do not apply; the compiler leaves them out.)
func flatten(out []*jsonschema.Schema, s *jsonschema.Schema) []*jsonschema.Schema {
	if s == nil {
		return out
	}
	if slices.Contains(out, s) {
		return out
	}
	out = append(out, s)
	if s.Ref != nil {
		out = flatten(out, s.Ref)
	}
	for _, a := range s.AllOf {
		out = flatten(out, a)
	}
	return out
}

func conj(parts ...*jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, p := range parts {
		out = flatten(out, p)
	}
	return out
}

func memoKey(members []*jsonschema.Schema) string {
	var b strings.Builder
	for _, m := range members {
		fmt.Fprintf(&b, "%p,", m)
	}
	return b.String()
}

// typesOf is the set of types the conjunction allows.
func (b *builder) typesOf(members []*jsonschema.Schema) typeSet {
	t := tAll
	for _, m := range members {
		t &= b.typesOfOne(m)
	}
	return t
}

// typesOfOne is the set of types m and what it references allow. Results are
// remembered, so that alternatives shared by many schemas are looked at once
// and Compile stays linear. A reference cycle allows everything: an answer
// larger than the truth is safe, as coercion only needs a node to never
// rule out a type the schema allows.
func (b *builder) typesOfOne(m *jsonschema.Schema) typeSet {
	if t, ok := b.types[m]; ok {
		return t
	}
	b.types[m] = tAll // what a cycle back to m sees
	t := ownTypes(m)
	if m.Ref != nil {
		t &= b.typesOfOne(m.Ref)
	}
	for _, a := range m.AllOf {
		t &= b.typesOfOne(a)
	}
	for _, alts := range [][]*jsonschema.Schema{m.AnyOf, m.OneOf} {
		if len(alts) == 0 {
			continue
		}
		var u typeSet
		for _, a := range alts {
			u |= b.typesOfOne(a)
		}
		t &= u
	}
	b.types[m] = t
	return t
}

// ownTypes is what type, enum, const and a boolean schema allow.
func ownTypes(m *jsonschema.Schema) typeSet {
	t := tAll
	if m.Bool != nil && !*m.Bool {
		return 0
	}
	if m.Types != nil && !m.Types.IsEmpty() {
		var tt typeSet
		for _, name := range m.Types.ToStrings() {
			tt |= typeBit(name)
		}
		t &= tt
	}
	if m.Enum != nil {
		var tt typeSet
		for _, v := range m.Enum.Values {
			tt |= typeOfValue(v)
		}
		t &= tt
	}
	if m.Const != nil {
		t &= typeOfValue(*m.Const)
	}
	return t
}

// structural adds to members the one alternative of each anyOf or oneOf that
// can hold a value of type want: a value of that type can only be valid
// through it, so its properties or items apply. With two or more such
// alternatives nothing is added, as it is not known which one applies.
func (b *builder) structural(members []*jsonschema.Schema, want typeSet) []*jsonschema.Schema {
	out := members
	for _, m := range members {
		for _, alts := range [][]*jsonschema.Schema{m.AnyOf, m.OneOf} {
			var only *jsonschema.Schema
			n := 0
			for _, a := range alts {
				if b.typesOfOne(a)&want != 0 {
					only = a
					n++
				}
			}
			if n == 1 {
				out = append(slices.Clip(out), conj(only)...)
			}
		}
	}
	return out
}

func (b *builder) build(members []*jsonschema.Schema) *node {
	if len(members) == 0 {
		return anyNode
	}
	key := memoKey(members)
	if n, ok := b.memo[key]; ok {
		return n
	}
	n := &node{types: b.typesOf(members)}
	b.memo[key] = n
	b.nodes = append(b.nodes, n)
	n.coerceHere = n.types&tString == 0 && n.types&tNonText != 0

	if n.types&tObject != 0 {
		b.buildObject(n, b.structural(members, tObject))
	}
	if n.types&tArray != 0 {
		b.buildArray(n, b.structural(members, tArray))
	}
	return n
}

func (b *builder) buildObject(n *node, members []*jsonschema.Schema) {
	var names []string
	for _, m := range members {
		for name := range m.Properties {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	for _, name := range names {
		var parts, named []*jsonschema.Schema
		for _, m := range members {
			if s, ok := m.Properties[name]; ok {
				parts = append(parts, s)
				named = append(named, s)
			} else if s := additional(m); s != nil {
				parts = append(parts, s)
			}
		}
		c := b.build(conj(parts...))
		if n.props == nil {
			n.props = map[string]*node{}
		}
		n.props[name] = c
		// Only a schema that names the property gives it a default, not
		// the additionalProperties of another part of an allOf.
		for _, p := range conj(named...) {
			if p.Default != nil {
				n.defaults = append(n.defaults, propDefault{name, *p.Default, trimLocation(p.Location)})
				break
			}
		}
	}
	var parts []*jsonschema.Schema
	for _, m := range members {
		if s := additional(m); s != nil {
			parts = append(parts, s)
		}
	}
	if len(parts) > 0 {
		n.addl = b.build(conj(parts...))
	}
}

// additional is the schema m gives properties it does not name, when that is
// known: with patternProperties it depends on the name, so it is not.
func additional(m *jsonschema.Schema) *jsonschema.Schema {
	if len(m.PatternProperties) > 0 {
		return nil
	}
	s, _ := m.AdditionalProperties.(*jsonschema.Schema)
	return s
}

func (b *builder) buildArray(n *node, members []*jsonschema.Schema) {
	longest := 0
	for _, m := range members {
		longest = max(longest, len(prefixOf(m)))
	}
	for i := range longest {
		var parts []*jsonschema.Schema
		for _, m := range members {
			parts = append(parts, itemSchema(m, i))
		}
		n.prefix = append(n.prefix, b.build(conj(parts...)))
	}
	var parts []*jsonschema.Schema
	for _, m := range members {
		parts = append(parts, itemSchema(m, longest))
	}
	if c := b.build(conj(parts...)); c != anyNode {
		n.items = c
	}
}

func prefixOf(m *jsonschema.Schema) []*jsonschema.Schema {
	if m.DraftVersion >= 2020 {
		return m.PrefixItems
	}
	items, _ := m.Items.([]*jsonschema.Schema)
	return items
}

// itemSchema is the schema m gives the array item at index i, or nil.
func itemSchema(m *jsonschema.Schema, i int) *jsonschema.Schema {
	if prefix := prefixOf(m); i < len(prefix) {
		return prefix[i]
	}
	if m.DraftVersion >= 2020 {
		return m.Items2020
	}
	switch items := m.Items.(type) {
	case *jsonschema.Schema:
		return items
	case []*jsonschema.Schema:
		s, _ := m.AdditionalItems.(*jsonschema.Schema)
		return s
	}
	return nil
}

// finish computes the flags, which depend on the nodes below and so, with
// recursive schemas, on a fixed point, and then the lists the walks use.
func (b *builder) finish() {
	for _, n := range b.nodes {
		n.coerce = n.coerceHere
		n.fill = len(n.defaults) > 0
	}
	for changed := true; changed; {
		changed = false
		for _, n := range b.nodes {
			c, f := n.coerce, n.fill
			n.children(func(k *node) {
				c = c || k.coerce
				f = f || k.fill
			})
			if c != n.coerce || f != n.fill {
				n.coerce, n.fill = c, f
				changed = true
			}
		}
	}
	for _, n := range b.nodes {
		names := make([]string, 0, len(n.props))
		for name := range n.props {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			k := n.props[name]
			if k.coerce {
				n.coerceProps = append(n.coerceProps, namedNode{name, k})
			}
			if k.fill {
				n.fillProps = append(n.fillProps, namedNode{name, k})
			}
		}
	}
}

func (n *node) children(f func(*node)) {
	for _, k := range n.props {
		f(k)
	}
	if n.addl != nil {
		f(n.addl)
	}
	for _, k := range n.prefix {
		f(k)
	}
	if n.items != nil {
		f(n.items)
	}
}

// child is the node of property name of an object at n.
func (n *node) child(name string) *node {
	if k, ok := n.props[name]; ok {
		return k
	}
	return n.addl
}

// item is the node of the array item at index i.
func (n *node) item(i int) *node {
	if i < len(n.prefix) {
		return n.prefix[i]
	}
	return n.items
}

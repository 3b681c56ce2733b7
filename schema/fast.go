package schema

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The validator reports every violation with its place, which is what a model
// needs, but it pays for that on valid arguments too: tens of allocations for
// a handful of properties. Most calls are valid, so Validate first asks a
// quick checker built at Compile that allocates nothing. When the checker is
// sure the value is valid, that is the answer; otherwise (invalid, or a
// keyword the checker does not handle, or a number too close to a bound to
// judge in float64) the validator runs and decides. The checker may therefore
// be unsure, but must never call valid what the validator rejects; a fuzz
// test holds it to that.

// verdict is the checker's answer.
type verdict int8

const (
	unsure verdict = iota
	valid
	invalid
)

// check is the quick checker's form of one compiled schema.
type check struct {
	s *jsonschema.Schema
	// slow: the schema has a keyword the checker does not handle.
	slow bool

	ref                 *check
	allOf, anyOf, oneOf []*check
	not, ifc, then, els *check

	types typeSet

	props        map[string]*check
	patterns     []patternCheck
	addl         *check
	addlFalse    bool
	propNames    *check
	depRequired  map[string][]string
	depSchemas   map[string]*check
	prefix       []*check
	items        *check
	itemsFalse   bool // items beyond prefix are not allowed
	multipleOf   int64
	min, max     bound
	exMin, exMax bound
}

type patternCheck struct {
	re jsonschema.Regexp
	c  *check
}

// buildChecks returns the checker of root, or nil when the schema applies
// itself to the same value without end, which the validator reports and the
// checker must not loop on.
func buildChecks(root *jsonschema.Schema) *check {
	if inPlaceCycle(root) {
		return nil
	}
	memo := map[*jsonschema.Schema]*check{}
	return newCheck(root, memo)
}

func newCheck(s *jsonschema.Schema, memo map[*jsonschema.Schema]*check) *check {
	if s == nil {
		return nil
	}
	if c, ok := memo[s]; ok {
		return c
	}
	c := &check{s: s, types: tAll}
	memo[s] = c
	sub := func(k *jsonschema.Schema) *check { return newCheck(k, memo) }
	subs := func(ks []*jsonschema.Schema) []*check {
		out := make([]*check, len(ks))
		for i, k := range ks {
			out[i] = sub(k)
		}
		return out
	}

	c.slow = s.RecursiveRef != nil || s.DynamicRef != nil ||
		s.UnevaluatedProperties != nil || s.UnevaluatedItems != nil ||
		s.ContentEncoding != nil || s.ContentMediaType != nil || s.ContentSchema != nil ||
		len(s.Extensions) > 0

	if s.Types != nil && !s.Types.IsEmpty() {
		c.types = 0
		for _, name := range s.Types.ToStrings() {
			c.types |= typeBit(name)
		}
	}
	c.ref = sub(s.Ref)
	c.allOf, c.anyOf, c.oneOf = subs(s.AllOf), subs(s.AnyOf), subs(s.OneOf)
	c.not, c.ifc, c.then, c.els = sub(s.Not), sub(s.If), sub(s.Then), sub(s.Else)

	if len(s.Properties) > 0 {
		c.props = make(map[string]*check, len(s.Properties))
		for name, k := range s.Properties {
			c.props[name] = sub(k)
		}
	}
	for re, k := range s.PatternProperties {
		c.patterns = append(c.patterns, patternCheck{re, sub(k)})
	}
	switch a := s.AdditionalProperties.(type) {
	case bool:
		c.addlFalse = !a
	case *jsonschema.Schema:
		c.addl = sub(a)
	}
	c.propNames = sub(s.PropertyNames)
	for name, d := range s.Dependencies {
		switch d := d.(type) {
		case []string:
			if c.depRequired == nil {
				c.depRequired = map[string][]string{}
			}
			c.depRequired[name] = append(c.depRequired[name], d...)
		case *jsonschema.Schema:
			if c.depSchemas == nil {
				c.depSchemas = map[string]*check{}
			}
			c.depSchemas[name] = sub(d)
		}
	}
	for name, d := range s.DependentRequired {
		if c.depRequired == nil {
			c.depRequired = map[string][]string{}
		}
		c.depRequired[name] = append(c.depRequired[name], d...)
	}
	for name, d := range s.DependentSchemas {
		if c.depSchemas == nil {
			c.depSchemas = map[string]*check{}
		}
		if _, dup := c.depSchemas[name]; dup {
			c.slow = true
		}
		c.depSchemas[name] = sub(d)
	}

	if s.DraftVersion >= 2020 {
		c.prefix = subs(s.PrefixItems)
		c.items = sub(s.Items2020)
	} else {
		switch items := s.Items.(type) {
		case *jsonschema.Schema:
			c.items = sub(items)
		case []*jsonschema.Schema:
			c.prefix = subs(items)
			switch a := s.AdditionalItems.(type) {
			case bool:
				c.itemsFalse = !a
			case *jsonschema.Schema:
				c.items = sub(a)
			}
		}
	}

	c.min, c.max = newBound(s.Minimum), newBound(s.Maximum)
	c.exMin, c.exMax = newBound(s.ExclusiveMinimum), newBound(s.ExclusiveMaximum)
	if s.MultipleOf != nil {
		if s.MultipleOf.IsInt() && s.MultipleOf.Num().IsInt64() && s.MultipleOf.Num().Int64() > 0 {
			c.multipleOf = s.MultipleOf.Num().Int64()
		} else {
			c.slow = true
		}
	}
	return c
}

// inPlaceCycle reports whether a schema reaches itself through keywords that
// apply to the same value ($ref, allOf, not, if …), without descending into a
// property or an item.
func inPlaceCycle(root *jsonschema.Schema) bool {
	const (
		unseen = iota
		active
		done
	)
	state := map[*jsonschema.Schema]int{}
	var inPlace, all func(s *jsonschema.Schema) bool
	inPlace = func(s *jsonschema.Schema) bool {
		if s == nil {
			return false
		}
		switch state[s] {
		case active:
			return true
		case done:
			return false
		}
		state[s] = active
		next := []*jsonschema.Schema{s.Ref, s.Not, s.If, s.Then, s.Else}
		next = append(next, s.AllOf...)
		next = append(next, s.AnyOf...)
		next = append(next, s.OneOf...)
		for _, k := range s.DependentSchemas {
			next = append(next, k)
		}
		for _, d := range s.Dependencies {
			if k, ok := d.(*jsonschema.Schema); ok {
				next = append(next, k)
			}
		}
		for _, k := range next {
			if inPlace(k) {
				return true
			}
		}
		state[s] = done
		return false
	}
	// Every schema is a possible start, since any can be reached through a
	// property or an item.
	seen := map[*jsonschema.Schema]bool{}
	all = func(s *jsonschema.Schema) bool {
		if s == nil || seen[s] {
			return false
		}
		seen[s] = true
		if inPlace(s) {
			return true
		}
		for _, k := range subschemas(s) {
			if all(k) {
				return true
			}
		}
		return false
	}
	return all(root)
}

// and combines the verdicts of checks that must all pass.
func and(a, b verdict) verdict {
	if a == invalid || b == invalid {
		return invalid
	}
	if a == unsure || b == unsure {
		return unsure
	}
	return valid
}

func (c *check) eval(v any) verdict {
	if c == nil {
		return valid
	}
	s := c.s
	if s.Bool != nil {
		if *s.Bool {
			return valid
		}
		return invalid
	}
	if c.slow {
		return unsure
	}
	r := valid

	num, isNum := v.(json.Number)
	switch v.(type) {
	case nil, bool, string, map[string]any, []any, json.Number:
	default:
		return unsure
	}

	// type --
	if c.types != tAll {
		t := typeOfValue(v)
		if isNum {
			switch integral(num) {
			case valid:
				t = tInteger
			case invalid:
				t = tFraction
			default:
				if c.types&tFraction == 0 {
					if c.types&tInteger == 0 {
						return invalid
					}
					r = unsure
				}
				t = tNumber
			}
		}
		if c.types&t == 0 {
			return invalid
		}
	}
	// const, enum --
	if s.Const != nil {
		if r = and(r, equal(v, *s.Const)); r == invalid {
			return invalid
		}
	}
	if s.Enum != nil {
		e := invalid
		for _, w := range s.Enum.Values {
			switch equal(v, w) {
			case valid:
				e = valid
			case unsure:
				e = unsure
			}
			if e == valid {
				break
			}
		}
		if r = and(r, e); r == invalid {
			return invalid
		}
	}
	if s.Format != nil && s.Format.Validate(v) != nil {
		return invalid
	}

	switch x := v.(type) {
	case map[string]any:
		r = and(r, c.object(x))
	case []any:
		r = and(r, c.array(x))
	case string:
		r = and(r, c.string(x))
	case json.Number:
		r = and(r, c.number(num))
	}
	if r == invalid {
		return invalid
	}

	// applicators on the same value --
	if c.ref != nil {
		if r = and(r, c.ref.eval(v)); r == invalid {
			return invalid
		}
	}
	for _, k := range c.allOf {
		if r = and(r, k.eval(v)); r == invalid {
			return invalid
		}
	}
	if len(c.anyOf) > 0 {
		a := invalid
		for _, k := range c.anyOf {
			switch k.eval(v) {
			case valid:
				a = valid
			case unsure:
				a = unsure
			}
			if a == valid {
				break
			}
		}
		if r = and(r, a); r == invalid {
			return invalid
		}
	}
	if len(c.oneOf) > 0 {
		matched, unknown := 0, false
		for _, k := range c.oneOf {
			switch k.eval(v) {
			case valid:
				matched++
			case unsure:
				unknown = true
			}
		}
		o := invalid
		switch {
		case matched > 1:
		case unknown:
			o = unsure
		case matched == 1:
			o = valid
		}
		if r = and(r, o); r == invalid {
			return invalid
		}
	}
	if c.not != nil {
		n := unsure
		switch c.not.eval(v) {
		case valid:
			return invalid
		case invalid:
			n = valid
		}
		r = and(r, n)
	}
	if c.ifc != nil {
		switch c.ifc.eval(v) {
		case valid:
			r = and(r, c.then.eval(v))
		case invalid:
			r = and(r, c.els.eval(v))
		default:
			r = and(r, unsure)
		}
	}
	return r
}

func (c *check) object(obj map[string]any) verdict {
	s := c.s
	if s.MinProperties != nil && len(obj) < *s.MinProperties {
		return invalid
	}
	if s.MaxProperties != nil && len(obj) > *s.MaxProperties {
		return invalid
	}
	for _, name := range s.Required {
		if _, ok := obj[name]; !ok {
			return invalid
		}
	}
	r := valid
	if c.props != nil || c.patterns != nil || c.addl != nil || c.addlFalse {
		for name, e := range obj {
			seen := false
			if k, ok := c.props[name]; ok {
				seen = true
				if r = and(r, k.eval(e)); r == invalid {
					return invalid
				}
			}
			for _, p := range c.patterns {
				if p.re.MatchString(name) {
					seen = true
					if r = and(r, p.c.eval(e)); r == invalid {
						return invalid
					}
				}
			}
			if !seen {
				if c.addlFalse {
					return invalid
				}
				if r = and(r, c.addl.eval(e)); r == invalid {
					return invalid
				}
			}
		}
	}
	if c.propNames != nil {
		for name := range obj {
			if r = and(r, c.propNames.eval(name)); r == invalid {
				return invalid
			}
		}
	}
	for name, reqd := range c.depRequired {
		if _, ok := obj[name]; ok {
			for _, q := range reqd {
				if _, ok := obj[q]; !ok {
					return invalid
				}
			}
		}
	}
	for name, k := range c.depSchemas {
		if _, ok := obj[name]; ok {
			if r = and(r, k.eval(obj)); r == invalid {
				return invalid
			}
		}
	}
	return r
}

func (c *check) array(arr []any) verdict {
	s := c.s
	if s.MinItems != nil && len(arr) < *s.MinItems {
		return invalid
	}
	if s.MaxItems != nil && len(arr) > *s.MaxItems {
		return invalid
	}
	if c.itemsFalse && len(arr) > len(c.prefix) {
		return invalid
	}
	r := valid
	if s.Contains != nil {
		r = unsure
	}
	if s.UniqueItems {
		if r = and(r, unique(arr)); r == invalid {
			return invalid
		}
	}
	for i, e := range arr {
		var k *check
		if i < len(c.prefix) {
			k = c.prefix[i]
		} else {
			k = c.items
		}
		if r = and(r, k.eval(e)); r == invalid {
			return invalid
		}
	}
	return r
}

// maxUnique bounds the arrays whose items unique checks pair by pair.
const maxUnique = 64

// unique says whether the items of arr differ from one another.
func unique(arr []any) verdict {
	if len(arr) > maxUnique {
		return unsure
	}
	r := valid
	for i := 1; i < len(arr); i++ {
		for j := range i {
			switch equal(arr[i], arr[j]) {
			case valid:
				return invalid
			case unsure:
				r = unsure
			}
		}
	}
	return r
}

func (c *check) string(str string) verdict {
	s := c.s
	if s.MinLength != nil || s.MaxLength != nil {
		n := utf8.RuneCountInString(str)
		if s.MinLength != nil && n < *s.MinLength {
			return invalid
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			return invalid
		}
	}
	if s.Pattern != nil && !s.Pattern.MatchString(str) {
		return invalid
	}
	return valid
}

func (c *check) number(num json.Number) verdict {
	r := valid
	if c.min.set || c.max.set || c.exMin.set || c.exMax.set {
		f, err := strconv.ParseFloat(string(num), 64)
		if err != nil {
			return unsure
		}
		r = and(r, c.min.check(num, f, +1, true))
		r = and(r, c.max.check(num, f, -1, true))
		r = and(r, c.exMin.check(num, f, +1, false))
		r = and(r, c.exMax.check(num, f, -1, false))
		if r == invalid {
			return invalid
		}
	}
	if c.multipleOf != 0 {
		n, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil {
			return unsure
		}
		if n%c.multipleOf != 0 {
			return invalid
		}
	}
	return r
}

// bound is a minimum or maximum as a float64.
type bound struct {
	f     float64
	set   bool
	exact bool // f is the bound exactly
}

func newBound(r *big.Rat) bound {
	if r == nil {
		return bound{}
	}
	f, exact := r.Float64()
	return bound{f: f, set: true, exact: exact}
}

// check judges the number num, f as a float64, against b: side +1 for a
// lower bound, -1 for an upper; inclusive says whether the bound itself is
// allowed.
//
// Rounding to float64 keeps order, so when the floats differ the exact
// numbers differ the same way. When they are equal the exact numbers are too
// only if both are exact in float64, which the check knows for the bound and
// for integer literals up to 2^53; otherwise it is unsure.
func (b bound) check(num json.Number, f float64, side int, inclusive bool) verdict {
	if !b.set {
		return valid
	}
	switch {
	case f > b.f:
		return boolVerdict(side > 0)
	case f < b.f:
		return boolVerdict(side < 0)
	}
	if b.exact {
		if n, err := strconv.ParseInt(string(num), 10, 64); err == nil && n >= -1<<53 && n <= 1<<53 {
			return boolVerdict(inclusive)
		}
	}
	return unsure
}

// integral says whether num is an integer, or unsure when the literal has an
// exponent.
func integral(num json.Number) verdict {
	s := string(num)
	if strings.ContainsAny(s, "eE") {
		return unsure
	}
	dot := strings.IndexByte(s, '.')
	if dot < 0 {
		return valid
	}
	if strings.Trim(s[dot+1:], "0") == "" {
		return valid
	}
	return invalid
}

// equal compares two decoded JSON values as the validator does, numbers by
// value.
func equal(a, b any) verdict {
	switch a := a.(type) {
	case nil:
		return boolVerdict(b == nil)
	case bool:
		w, ok := b.(bool)
		return boolVerdict(ok && a == w)
	case string:
		w, ok := b.(string)
		return boolVerdict(ok && a == w)
	case json.Number:
		w, ok := b.(json.Number)
		if !ok {
			switch b.(type) {
			case nil, bool, string, map[string]any, []any:
				return invalid
			}
			return unsure
		}
		if a == w {
			return valid
		}
		fa, errA := strconv.ParseFloat(string(a), 64)
		fw, errW := strconv.ParseFloat(string(w), 64)
		if errA == nil && errW == nil && fa != fw {
			return invalid
		}
		return unsure
	case map[string]any:
		w, ok := b.(map[string]any)
		if !ok || len(a) != len(w) {
			return boolVerdict(false)
		}
		r := valid
		for k, e := range a {
			f, ok := w[k]
			if !ok {
				return invalid
			}
			if r = and(r, equal(e, f)); r == invalid {
				return invalid
			}
		}
		return r
	case []any:
		w, ok := b.([]any)
		if !ok || len(a) != len(w) {
			return invalid
		}
		r := valid
		for i := range a {
			if r = and(r, equal(a[i], w[i])); r == invalid {
				return invalid
			}
		}
		return r
	}
	return unsure
}

func boolVerdict(ok bool) verdict {
	if ok {
		return valid
	}
	return invalid
}

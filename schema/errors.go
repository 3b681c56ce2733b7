package schema

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Violation is one way a value breaks its schema.
type Violation struct {
	// Pointer locates the offending value (RFC 6901; "" is the whole value).
	// A missing required property is reported at the object that lacks it.
	Pointer string `json:"pointer"`
	// Message says what is wrong in words a model can act on.
	Message string `json:"message"`
}

// ValidationError lists every violation found in a value, sorted by pointer.
type ValidationError struct {
	Violations []Violation
}

// Error returns the violations on one line, for example
//
//	2 problems: /count: must be >= 1 but found 0; (root): missing required property "path"
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(len(e.Violations)))
	if len(e.Violations) == 1 {
		b.WriteString(" problem: ")
	} else {
		b.WriteString(" problems: ")
	}
	for i, v := range e.Violations {
		if i > 0 {
			b.WriteString("; ")
		}
		if v.Pointer == "" {
			b.WriteString("(root)")
		} else {
			b.WriteString(v.Pointer)
		}
		b.WriteString(": ")
		b.WriteString(v.Message)
	}
	return b.String()
}

// violations turns the validator's cause tree into a sorted, deduplicated
// list. closed maps the location of each schema that forbids additional
// properties to the names it allows, so that an unknown property can be
// answered with the names the model should have used.
func violations(err *jsonschema.ValidationError, closed map[string][]string) []Violation {
	var out []Violation
	collect(err, closed, &out)
	slices.SortFunc(out, func(a, b Violation) int {
		if c := comparePointers(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.Compact(out)
}

func collect(e *jsonschema.ValidationError, closed map[string][]string, out *[]Violation) {
	if len(e.Causes) == 0 {
		leaf(e, closed, out)
		return
	}
	// When every alternative of an anyOf or oneOf failed only on its type,
	// one line naming all the types reads better than one line per branch.
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		if want, got, ok := typeAlternatives(e); ok {
			*out = append(*out, Violation{pointer(e.InstanceLocation), "must be " + want + " but found " + got})
			return
		}
	}
	for _, c := range e.Causes {
		collect(c, closed, out)
	}
}

func typeAlternatives(e *jsonschema.ValidationError) (want, got string, ok bool) {
	var wants []string
	for _, c := range e.Causes {
		t, isType := c.ErrorKind.(*kind.Type)
		if !isType || len(c.Causes) > 0 || !slices.Equal(c.InstanceLocation, e.InstanceLocation) {
			return "", "", false
		}
		got = t.Got
		for _, w := range t.Want {
			if !slices.Contains(wants, w) {
				wants = append(wants, w)
			}
		}
	}
	return strings.Join(wants, " or "), got, true
}

func leaf(e *jsonschema.ValidationError, closed map[string][]string, out *[]Violation) {
	at := pointer(e.InstanceLocation)
	add := func(msg string) { *out = append(*out, Violation{at, msg}) }
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, p := range k.Missing {
			add("missing required property " + strconv.Quote(p))
		}
	case *kind.AdditionalProperties:
		allowed := closed[e.SchemaURL]
		for _, p := range k.Properties {
			msg := "unknown property " + strconv.Quote(p)
			if len(allowed) > 0 {
				msg += "; allowed: " + strings.Join(allowed, ", ")
			}
			*out = append(*out, Violation{pointer(append(e.InstanceLocation[:len(e.InstanceLocation):len(e.InstanceLocation)], p)), msg})
		}
	case *kind.DependentRequired:
		for _, p := range k.Missing {
			add("missing property " + strconv.Quote(p) + ", required when " + strconv.Quote(k.Prop) + " is present")
		}
	case *kind.Dependency:
		for _, p := range k.Missing {
			add("missing property " + strconv.Quote(p) + ", required when " + strconv.Quote(k.Prop) + " is present")
		}
	default:
		add(message1(e.ErrorKind))
	}
}

var printer = message.NewPrinter(language.English)

// message1 words one violation other than a missing or unknown property.
func message1(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return "must be " + strings.Join(k.Want, " or ") + " but found " + k.Got
	case *kind.Minimum:
		return "must be >= " + ratString(k.Want) + " but found " + ratString(k.Got)
	case *kind.Maximum:
		return "must be <= " + ratString(k.Want) + " but found " + ratString(k.Got)
	case *kind.ExclusiveMinimum:
		return "must be > " + ratString(k.Want) + " but found " + ratString(k.Got)
	case *kind.ExclusiveMaximum:
		return "must be < " + ratString(k.Want) + " but found " + ratString(k.Got)
	case *kind.MultipleOf:
		return "must be a multiple of " + ratString(k.Want) + " but found " + ratString(k.Got)
	case *kind.MinLength:
		return "must be at least " + count(k.Want, "character") + " long but has " + strconv.Itoa(k.Got)
	case *kind.MaxLength:
		return "must be at most " + count(k.Want, "character") + " long but has " + strconv.Itoa(k.Got)
	case *kind.MinItems:
		return "must have at least " + count(k.Want, "item") + " but has " + strconv.Itoa(k.Got)
	case *kind.MaxItems:
		return "must have at most " + count(k.Want, "item") + " but has " + strconv.Itoa(k.Got)
	case *kind.MinProperties:
		return "must have at least " + count(k.Want, "property") + " but has " + strconv.Itoa(k.Got)
	case *kind.MaxProperties:
		return "must have at most " + count(k.Want, "property") + " but has " + strconv.Itoa(k.Got)
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = display(w)
		}
		if len(want) == 1 {
			return "must be " + want[0] + " but found " + display(k.Got)
		}
		return "must be one of " + strings.Join(want, ", ") + " but found " + display(k.Got)
	case *kind.Const:
		return "must be " + display(k.Want) + " but found " + display(k.Got)
	case *kind.Pattern:
		return "must match the pattern " + strconv.Quote(k.Want) + " but found " + display(k.Got)
	case *kind.Format:
		msg := "must be a valid " + k.Want + " but found " + display(k.Got)
		if k.Err != nil {
			msg += " (" + k.Err.Error() + ")"
		}
		return msg
	case *kind.UniqueItems:
		return "items must be unique but items " + strconv.Itoa(k.Duplicates[0]) + " and " + strconv.Itoa(k.Duplicates[1]) + " are equal"
	case *kind.OneOf:
		if len(k.Subschemas) >= 2 {
			return "must match exactly one alternative of oneOf but matches " + strconv.Itoa(k.Subschemas[0]) + " and " + strconv.Itoa(k.Subschemas[1])
		}
		return "must match exactly one alternative of oneOf but matches none"
	case *kind.AnyOf:
		return "must match at least one alternative of anyOf"
	case *kind.Not:
		return "must not match the schema given in not"
	case *kind.FalseSchema:
		return "no value is allowed here"
	case *kind.PropertyNames:
		return "property name " + strconv.Quote(k.Property) + " is not allowed"
	}
	return k.LocalizedString(printer)
}

func count(n int, noun string) string {
	s := strconv.Itoa(n) + " " + noun
	if n != 1 {
		if strings.HasSuffix(noun, "y") {
			return s[:len(s)-1] + "ies"
		}
		return s + "s"
	}
	return s
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// display renders a JSON value for a message, shortened when long.
func display(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "a value"
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	const limit = 60
	if len(b) > limit {
		// Cut at a rune boundary so the message stays valid UTF-8.
		cut := limit
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		return string(b[:cut]) + "…"
	}
	return string(b)
}

// pointer renders validator path tokens as an RFC 6901 JSON pointer.
func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return ""
	}
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		if strings.ContainsAny(t, "~/") {
			t = strings.ReplaceAll(t, "~", "~0")
			t = strings.ReplaceAll(t, "/", "~1")
		}
		b.WriteString(t)
	}
	return b.String()
}

// comparePointers orders pointers token by token, array indexes by number,
// so /items/2 sorts before /items/10 and a parent before its children.
func comparePointers(a, b string) int {
	for a != "" && b != "" {
		ta, ra := nextToken(a)
		tb, rb := nextToken(b)
		if c := compareTokens(ta, tb); c != 0 {
			return c
		}
		a, b = ra, rb
	}
	return cmp.Compare(len(a), len(b))
}

func nextToken(p string) (tok, rest string) {
	p = p[1:]
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i], p[i:]
	}
	return p, ""
}

func compareTokens(a, b string) int {
	na, errA := strconv.ParseUint(a, 10, 64)
	nb, errB := strconv.ParseUint(b, 10, 64)
	if errA == nil && errB == nil {
		return cmp.Compare(na, nb)
	}
	return strings.Compare(a, b)
}

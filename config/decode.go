package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
)

// parse decodes one file into cfg, in two passes. go-toml first decodes the
// document into plain maps, which catches every syntax error and every TOML
// rule (a key defined twice, a table redefined …) with its line. decoder then
// copies the maps into the documented structs, by their `toml` tags, and
// reports every unknown key, wrong type and bad value with the line that
// positions found for it.
func parse(name string, data []byte, cfg *Config) []error {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		line := 1
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, _ = de.Position()
		}
		msg := strings.TrimPrefix(err.Error(), "toml: ")
		return []error{&Error{Pos: Pos{File: name, Line: max(line, 1)}, Msg: msg}}
	}
	pos, err := indexPositions(data)
	if err != nil {
		// go-toml accepted what its own parser rejects; report it rather
		// than decode without lines.
		return []error{&Error{Pos: Pos{File: name, Line: 1}, Msg: err.Error()}}
	}
	d := &decoder{file: name, pos: pos}
	d.decode(nil, doc, reflect.ValueOf(cfg).Elem())
	cfg.recordOrigins(name, pos)
	return d.errs
}

// decoder copies a decoded document into Go values. What a Go type accepts:
//
//   - a struct: a table; each key is a field tagged `toml:"key"`, and any
//     other key is an error. A field of type [Pos] receives the table's
//     position; other fields tagged `toml:"-"` are left alone.
//   - map[string]T: a table whose keys are free, each value decoded as T.
//   - []T: an array.
//   - *T: whatever T accepts; a nil pointer means the key was not set.
//   - string, bool: the same TOML type.
//   - int kinds: an integer, not negative: every number in lathe.toml is a
//     size, a count or a limit.
//   - float64: an integer or a float.
//   - time.Duration: a string in Go's duration syntax ("90s", "1m30s"), not
//     negative.
//   - any: any value with a JSON form (not a date or time), kept as go-toml
//     decodes it: string, bool, int64, float64, []any, map[string]any.
//
// Adding a key is adding a tagged field. A field of a type outside this list
// panics when a file sets its key, so the test that sets the new key finds it.
// validator is a string type whose values the decoder checks after setting
// them, so that the error names the key's line.
type validator interface{ validate() error }

type decoder struct {
	file string
	pos  *positions
	errs []error
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	posType      = reflect.TypeFor[Pos]()
)

func (d *decoder) at(path []string) Pos {
	return Pos{File: d.file, Line: d.pos.lineOf(path)}
}

func (d *decoder) failf(path []string, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if len(path) > 0 {
		msg = keyString(path) + ": " + msg
	}
	d.errs = append(d.errs, &Error{Pos: d.at(path), Msg: msg})
}

func (d *decoder) mismatch(path []string, t reflect.Type, v any) {
	d.failf(path, "expected %s, got %s", expected(t), describe(v))
}

func (d *decoder) decode(path []string, v any, rv reflect.Value) {
	t := rv.Type()
	if t == durationType {
		d.duration(path, v, rv)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if rv.IsNil() {
			rv.Set(reflect.New(t.Elem()))
		}
		d.decode(path, v, rv.Elem())
	case reflect.Struct:
		// The position is set even when the value is not a table, so that
		// later checks of the struct can still point at it.
		for i := range t.NumField() {
			if t.Field(i).Type == posType {
				rv.Field(i).Set(reflect.ValueOf(d.at(path)))
			}
		}
		m, ok := v.(map[string]any)
		if !ok {
			d.mismatch(path, t, v)
			return
		}
		d.table(path, m, rv)
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok || t.Key().Kind() != reflect.String {
			d.mismatch(path, t, v)
			return
		}
		if rv.IsNil() {
			rv.Set(reflect.MakeMap(t))
		}
		for _, k := range d.sortedKeys(path, m) {
			elem := reflect.New(t.Elem()).Elem()
			d.decode(append(slices.Clip(path), k), m[k], elem)
			rv.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), elem)
		}
	case reflect.Slice:
		a, ok := v.([]any)
		if !ok {
			d.mismatch(path, t, v)
			return
		}
		s := reflect.MakeSlice(t, len(a), len(a))
		for i, e := range a {
			d.decode(append(slices.Clip(path), strconv.Itoa(i)), e, s.Index(i))
		}
		rv.Set(s)
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			d.mismatch(path, t, v)
			return
		}
		rv.SetString(s)
		if c, ok := rv.Addr().Interface().(validator); ok {
			if err := c.validate(); err != nil {
				d.failf(path, "%v", err)
			}
		}
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			d.mismatch(path, t, v)
			return
		}
		rv.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(int64)
		switch {
		case !ok:
			d.mismatch(path, t, v)
		case n < 0:
			d.failf(path, "must not be negative, got %d", n)
		case rv.CanInt() && rv.OverflowInt(n), rv.CanUint() && rv.OverflowUint(uint64(n)):
			d.failf(path, "%d is too large", n)
		case rv.CanInt():
			rv.SetInt(n)
		default:
			rv.SetUint(uint64(n))
		}
	case reflect.Float64:
		var f float64
		switch n := v.(type) {
		case float64:
			f = n
		case int64:
			f = float64(n)
		default:
			d.mismatch(path, t, v)
			return
		}
		if f < 0 || math.IsNaN(f) {
			d.failf(path, "must not be negative, got %s", strconv.FormatFloat(f, 'g', -1, 64))
			return
		}
		rv.SetFloat(f)
	case reflect.Interface:
		if t.NumMethod() != 0 {
			panic(fmt.Sprintf("config: cannot decode into a %s (at %s); see the decoder's doc", t, keyString(path)))
		}
		if d.plain(path, v) {
			rv.Set(reflect.ValueOf(v))
		}
	default:
		panic(fmt.Sprintf("config: cannot decode into a %s (at %s); see the decoder's doc", t, keyString(path)))
	}
}

// plain reports whether v, a value for an `any` field, has a JSON form:
// dates and times, which JSON lacks, are errors.
func (d *decoder) plain(path []string, v any) bool {
	switch v := v.(type) {
	case string, bool, int64, float64:
		return true
	case []any:
		ok := true
		for i, e := range v {
			ok = d.plain(append(slices.Clip(path), strconv.Itoa(i)), e) && ok
		}
		return ok
	case map[string]any:
		ok := true
		for _, k := range d.sortedKeys(path, v) {
			ok = d.plain(append(slices.Clip(path), k), v[k]) && ok
		}
		return ok
	}
	d.failf(path, "dates and times have no JSON form; write a string instead")
	return false
}

func (d *decoder) duration(path []string, v any, rv reflect.Value) {
	s, ok := v.(string)
	if !ok {
		d.mismatch(path, rv.Type(), v)
		return
	}
	dur, err := time.ParseDuration(s)
	switch {
	case err != nil && strings.Contains(err.Error(), "missing unit"):
		d.failf(path, "invalid duration %s: missing unit, as in \"30s\"", quote(s))
	case err != nil:
		d.failf(path, "invalid duration %s", quote(s))
	case dur < 0:
		d.failf(path, "must not be negative, got %s", quote(s))
	default:
		rv.SetInt(int64(dur))
	}
}

// table decodes the keys of m into the tagged fields of the struct rv.
func (d *decoder) table(path []string, m map[string]any, rv reflect.Value) {
	t := rv.Type()
	fields := map[string]int{}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type == posType || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		switch name {
		case "-":
			continue
		case "":
			panic(fmt.Sprintf("config: field %s.%s has no toml tag", t, f.Name))
		}
		fields[name] = i
		names = append(names, name)
	}
	for _, k := range d.sortedKeys(path, m) {
		key := append(slices.Clip(path), k)
		i, ok := fields[k]
		if !ok {
			msg := "unknown key " + strconv.Quote(k)
			if s := suggest(k, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			if len(path) > 0 {
				msg = "[" + keyString(path) + "] " + msg
			}
			d.errs = append(d.errs, &Error{Pos: d.at(key), Msg: msg})
			continue
		}
		d.decode(key, m[k], rv.Field(i))
	}
}

// sortedKeys returns the keys of m in the order they appear in the file, so
// that errors come out in that order too.
func (d *decoder) sortedKeys(path []string, m map[string]any) []string {
	type keyLine struct {
		key  string
		line int
	}
	kl := make([]keyLine, 0, len(m))
	for k := range m {
		kl = append(kl, keyLine{k, d.pos.lineOf(append(slices.Clip(path), k))})
	}
	slices.SortFunc(kl, func(a, b keyLine) int {
		if a.line != b.line {
			return a.line - b.line
		}
		return strings.Compare(a.key, b.key)
	})
	keys := make([]string, len(kl))
	for i, e := range kl {
		keys[i] = e.key
	}
	return keys
}

// keyString writes a path as TOML would: tools.read_file, tools."a b".
func keyString(path []string) string {
	var b strings.Builder
	for i, p := range path {
		if i > 0 {
			b.WriteByte('.')
		}
		if bareKey(p) {
			b.WriteString(p)
		} else {
			b.WriteString(strconv.Quote(p))
		}
	}
	return b.String()
}

func bareKey(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// expected says in words what a Go type accepts.
func expected(t reflect.Type) string {
	if t == durationType {
		return `a duration string such as "30s"`
	}
	switch t.Kind() {
	case reflect.Pointer:
		return expected(t.Elem())
	case reflect.Struct, reflect.Map:
		return "a table"
	case reflect.Slice:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Float64:
		return "a number"
	default:
		return "an integer"
	}
}

// describe says in words what a decoded TOML value is.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		return "string " + quote(v)
	case int64:
		return "integer " + strconv.FormatInt(v, 10)
	case float64:
		return "float " + strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return "boolean " + strconv.FormatBool(v)
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	default:
		return "a date or time"
	}
}

// quote quotes s for a message, cut short if it is long.
func quote(s string) string {
	const limit = 40
	if len(s) <= limit {
		return strconv.Quote(s)
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}

// suggest returns a name that key likely misspells or cuts short, or "".
func suggest(key string, names []string) string {
	best, bestDist := "", 3
	for _, n := range names {
		if len(key) >= 3 && strings.HasPrefix(n, key) {
			return n
		}
		if d := distance(key, n); d < bestDist && d < len(key) {
			best, bestDist = n, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return max(len(a), len(b))
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

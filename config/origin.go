package config

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Where each value of a configuration came from.
//
// Parse records, for every value a file sets, the line of its key; Merge
// keeps, for every value, the place of the file that won it; Split keeps the
// places of what it keeps. So a merged configuration answers "where was
// this set?" for each of its values ([Config.Origin], [Config.Settings]),
// which is what `lathe config` and `lathe describe` show a person.

// origins maps the path of each value a configuration sets (pathKey) to the
// place that set it.
type origins map[string]Pos

// eachSet calls f with the path of every value v sets: the values that
// [Config.Merge] lays over another configuration one by one. A table is not
// a value of its own but holds values; a map's entry that is not a table,
// an array, and a pointer to a plain value are values, as is any other
// field that is not zero (a zero value overrides nothing).
func eachSet(path []string, v reflect.Value, f func(path []string, v reflect.Value)) {
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			key, ok := tomlKey(t.Field(i))
			if ok {
				eachSet(append(slices.Clip(path), key), v.Field(i), f)
			}
		}
	case reflect.Pointer:
		switch {
		case v.IsNil():
		case v.Elem().Kind() == reflect.Struct:
			eachSet(path, v.Elem(), f)
		default:
			f(path, v)
		}
	case reflect.Map:
		for _, k := range sortedMapKeys(v) {
			e := v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key()))
			p := append(slices.Clip(path), k)
			if mergeable(e) {
				eachSet(p, e, f)
			} else {
				// merge sets an entry that is not a table whatever it
				// holds, an empty string included.
				f(p, e)
			}
		}
	default:
		if !v.IsZero() {
			f(path, v)
		}
	}
}

// tomlKey returns the key of a struct field, and false for a field that no
// file sets (unexported, a Pos, or tagged "-").
func tomlKey(f reflect.StructField) (string, bool) {
	if !f.IsExported() || f.Type == posType {
		return "", false
	}
	key, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return key, key != "" && key != "-"
}

func sortedMapKeys(m reflect.Value) []string {
	keys := make([]string, 0, m.Len())
	for _, k := range m.MapKeys() {
		keys = append(keys, k.String())
	}
	slices.Sort(keys)
	return keys
}

// recordOrigins sets the origin of every value of c, one file just parsed,
// to the line of its key in that file.
func (c *Config) recordOrigins(file string, pos *positions) {
	o := origins{}
	eachSet(nil, reflect.ValueOf(c).Elem(), func(path []string, _ reflect.Value) {
		o[pathKey(path)] = Pos{File: file, Line: pos.lineOf(path)}
	})
	c.origins = o.orNil()
}

// orNil returns o, or nil when it is empty, so that a configuration that
// sets nothing equals the zero Config.
func (o origins) orNil() origins {
	if len(o) == 0 {
		return nil
	}
	return o
}

// mergeOrigins takes the origin of every value over sets, as Merge takes
// the value.
func (c *Config) mergeOrigins(over *Config) {
	o := maps.Clone(c.origins)
	if o == nil {
		o = origins{}
	}
	eachSet(nil, reflect.ValueOf(over).Elem(), func(path []string, _ reflect.Value) {
		k := pathKey(path)
		if p, ok := over.origins[k]; ok {
			o[k] = p
		} else {
			// A value set in code has no place; it must not keep the
			// place of the value it replaced.
			delete(o, k)
		}
	})
	c.origins = o.orNil()
}

// keepOrigins gives n, a part of c, the origins of the values it kept.
func (c *Config) keepOrigins(n *Config) {
	o := origins{}
	eachSet(nil, reflect.ValueOf(n).Elem(), func(path []string, _ reflect.Value) {
		if p, ok := c.origins[pathKey(path)]; ok {
			o[pathKey(path)] = p
		}
	})
	n.origins = o.orNil()
}

// Origin returns where the value at path was set, as in
// Origin("tools", "read_file", "timeout"): the file whose value won, and
// the line of its key. ok is false for a value no file set (the default
// applies), and for a table.
func (c *Config) Origin(path ...string) (pos Pos, ok bool) {
	if c == nil {
		return Pos{}, false
	}
	pos, ok = c.origins[pathKey(path)]
	return pos, ok
}

// Setting is one value of a configuration and where it was set.
type Setting struct {
	// Key is the value's path, as in ["tools", "read_file", "timeout"]; a
	// rule's values are under ["policy", "rules", "0"], numbered in the
	// order the rules apply.
	Key []string
	// Value is the value as TOML holds it: a string (a duration too, as
	// "30s"), a bool, an int64, a float64, or a []any or map[string]any of
	// those.
	Value any
	// Pos is where it was set; zero when the configuration does not know
	// (a value set in code).
	Pos Pos
}

// Name returns the key as TOML writes it, as in tools."a b".timeout.
func (s Setting) Name() string { return keyString(s.Key) }

// Settings returns every value c sets, with where each was set: the tables
// in the order Config declares them, the entries of a map in the order of
// their names. A policy rule's values are each placed at the rule.
func (c *Config) Settings() []Setting {
	if c == nil {
		return nil
	}
	var out []Setting
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := range t.NumField() {
		key, ok := tomlKey(t.Field(i))
		if !ok {
			continue
		}
		if t.Field(i).Type == reflect.TypeFor[Policy]() {
			out = append(out, c.ruleSettings()...)
			continue
		}
		eachSet([]string{key}, v.Field(i), func(path []string, v reflect.Value) {
			out = append(out, Setting{Key: path, Value: plainValue(v), Pos: c.origins[pathKey(path)]})
		})
	}
	return out
}

// ruleSettings returns the values of the policy rules. Rules are not merged
// key by key (the trust of each file decides whether its rules replace or
// add to those before them), so each value is placed at its rule.
func (c *Config) ruleSettings() []Setting {
	var out []Setting
	for i, r := range c.Policy.Rules {
		eachSet([]string{"policy", "rules", strconv.Itoa(i)}, reflect.ValueOf(r), func(path []string, v reflect.Value) {
			out = append(out, Setting{Key: path, Value: plainValue(v), Pos: r.Pos})
		})
	}
	return out
}

// plainValue turns a value of Config into what TOML would hold.
func plainValue(v reflect.Value) any {
	if v.Type() == durationType {
		return time.Duration(v.Int()).String()
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return plainValue(v.Elem())
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(v.Uint())
	case reflect.Float32, reflect.Float64:
		return v.Float()
	case reflect.Slice:
		out := make([]any, v.Len())
		for i := range v.Len() {
			out[i] = plainValue(v.Index(i))
		}
		return out
	case reflect.Map:
		out := make(map[string]any, v.Len())
		for _, k := range sortedMapKeys(v) {
			out[k] = plainValue(v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key())))
		}
		return out
	case reflect.Struct:
		out := map[string]any{}
		eachSet(nil, v, func(path []string, e reflect.Value) { out[strings.Join(path, ".")] = plainValue(e) })
		return out
	}
	// Config holds no other kind; should it gain one, JSON says what it is.
	b, _ := json.Marshal(v.Interface())
	return string(b)
}

package config

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestDocs checks docs/config.md against the code: every key has a row in a
// table of the doc, and every TOML example in it parses.
func TestDocs(t *testing.T) {
	b, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)

	// onPath holds the struct types being visited: a type that contains
	// itself (a parameter's items are a parameter) is documented once.
	onPath := map[reflect.Type]bool{}
	var keys func(prefix string, typ reflect.Type)
	keys = func(prefix string, typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Map || typ.Kind() == reflect.Slice {
			if typ.Kind() == reflect.Map {
				prefix += ".NAME"
			}
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || typ == durationType || onPath[typ] {
			return
		}
		onPath[typ] = true
		defer delete(onPath, typ)
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("toml"), ",")
			if name == "" || name == "-" {
				continue
			}
			key := strings.TrimPrefix(prefix+"."+name, ".")
			ft := typ.Field(i).Type
			if ft.Kind() == reflect.Struct || ft.Kind() == reflect.Map {
				if !strings.Contains(doc, "## `["+strings.TrimPrefix(key, ".")+"]`") &&
					!strings.Contains(doc, "## `["+key+".NAME]`") {
					t.Errorf("docs/config.md has no section for [%s]", key)
				}
			} else if !strings.Contains(doc, "\n| `"+name+"` |") {
				t.Errorf("docs/config.md has no row for %s", key)
			}
			keys(key, ft)
		}
	}
	keys("", reflect.TypeFor[Config]())

	examples := regexp.MustCompile("(?s)```toml[^\n]*\n(.*?)```").FindAllStringSubmatch(doc, -1)
	if len(examples) == 0 {
		t.Fatal("docs/config.md has no TOML examples")
	}
	for _, m := range examples {
		if _, err := Parse("example", []byte(m[1])); err != nil {
			t.Errorf("docs/config.md example does not parse: %v\n%s", err, m[1])
		}
	}
}

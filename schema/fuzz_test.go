package schema

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzCoerce checks, for a fuzzed schema and fuzzed arguments, that Coerce
// never panics, that coercing a second time changes nothing, and that
// arguments that were valid are left alone and stay valid.
func FuzzCoerce(f *testing.F) {
	for _, s := range []struct{ schema, args string }{
		{coerceSchema, `{"obj":"{\"n\":\"1\"}","arr":["2.5"],"int":"3","flag":"true","nil":"null","text":"4"}`},
		{coerceSchema, `{"tuple":["1","x","true"],"dict":{"a":"1"},"opt":"{\"k\":\"false\"}","maybe":"null"}`},
		{coerceSchema, `{"int":"2.5","num":"{}","either":"1","list":"[{\"id\":\"1\"}]"}`},
		{defaultsSchema, `{"opts":"{\"depth\":\"3\"}","filters":[{"op":1}]}`},
		{fileSchema, `{"path":"a","count":"2","opts":{"depth":"1","a/b~c":"false"},"ranges":[{"from":"1","to":"2"}]}`},
		{`{"$ref":"#/$defs/t","$defs":{"t":{"type":"object","properties":{"k":{"type":"array","items":{"$ref":"#/$defs/t"}}}}}}`, `{"k":"[{\"k\":\"[]\"}]"}`},
		{`{"type":"object","additionalProperties":{"type":["integer","null"]}}`, `{"a":"1","b":"null","c":"x"}`},
		{`{"properties":{"a":{"oneOf":[{"type":"array","items":{"type":"boolean"}},{"type":"integer"}]}}}`, `{"a":"[\"true\"]"}`},
		{`{"properties":{"a":{"allOf":[{"type":["integer","string"]},{"type":["integer","boolean"]}]}}}`, `{"a":"7"}`},
		{`{"properties":{"a":{"const":3}}}`, `{"a":"3"}`},
		{coerceSchema, `{"names":"read_file","any":"x","named":"a","arr":"2","tuple":"1"}`},
		{`{"properties":{"a":{"type":"array","items":{"type":"array","items":{"type":"integer"}}}}}`, `{"a":"3"}`},
	} {
		f.Add(s.schema, s.args)
	}
	f.Fuzz(func(t *testing.T, rawSchema, rawArgs string) {
		s, err := Compile(json.RawMessage(rawSchema))
		if err != nil {
			return
		}
		v, err := Decode(json.RawMessage(rawArgs))
		if err != nil {
			return
		}
		validBefore := s.Validate(clone(v)) == nil

		once, changed := s.Coerce(clone(v))
		if !changed && !reflect.DeepEqual(once, v) {
			t.Fatalf("Coerce reported no change but changed %s", rawArgs)
		}
		if validBefore {
			if changed {
				t.Fatalf("Coerce changed valid arguments %s", rawArgs)
			}
			if err := s.Validate(once); err != nil {
				t.Fatalf("valid arguments %s became invalid: %v", rawArgs, err)
			}
		}

		twice, changedAgain := s.Coerce(clone(once))
		if changedAgain || !reflect.DeepEqual(twice, once) {
			a, _ := json.Marshal(once)
			b, _ := json.Marshal(twice)
			t.Fatalf("Coerce is not idempotent on %s: %s then %s", rawArgs, a, b)
		}
	})
}

// FuzzApplyDefaults checks, for a fuzzed schema and fuzzed arguments, that
// filling in defaults always ends, adds no more than the bound Compile
// promises for each object it fills, and is idempotent. The seeds in
// testdata/fuzz/FuzzApplyDefaults hold the recursive shapes that once made
// it overflow the stack.
func FuzzApplyDefaults(f *testing.F) {
	for _, s := range []struct{ schema, args string }{
		{defaultsSchema, `{"opts":{},"filters":[{},{"op":"ne"}],"named":{}}`},
		{`{"properties":{"a":{"$ref":"#"},"n":{"default":1}}}`, `{"a":{"a":{"a":{}}}}`},
		{`{"properties":{"a":{"$ref":"#","default":{"a":null}}}}`, `{}`},
		{`{"type":"object","additionalProperties":{"properties":{"d":{"default":[1,{"x":2}]}}}}`, `{"k":{},"j":{"d":null}}`},
		{`{"properties":{"l":{"type":"array","items":{"properties":{"v":{"default":{}}}}}}}`, `{"l":[{},{},[]]}`},
	} {
		f.Add(s.schema, s.args)
	}
	f.Fuzz(func(t *testing.T, rawSchema, rawArgs string) {
		s, err := Compile(json.RawMessage(rawSchema))
		if err != nil {
			return
		}
		v, err := Decode(json.RawMessage(rawArgs))
		if err != nil {
			return
		}
		before := countValues(v)
		// Every container of the arguments may get each of its defaults
		// once, and each default is bounded at Compile.
		limit := before + before*MaxDefaultValues*len(s.root.allDefaults())
		once, _ := s.ApplyDefaults(v)
		if after := countValues(once); after > limit {
			t.Fatalf("ApplyDefaults grew %d values to %d, beyond the bound %d", before, after, limit)
		}
		_ = s.Validate(once)
		snapshot := clone(once)
		twice, changed := s.ApplyDefaults(once)
		if changed || !reflect.DeepEqual(twice, snapshot) {
			t.Fatalf("ApplyDefaults is not idempotent on %s", rawArgs)
		}
	})
}

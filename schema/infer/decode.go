package infer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Unmarshal decodes JSON arguments into v, the Go value a schema was
// inferred from, reading numbers as JSON Schema does: an int field has the
// schema "integer", which 1.0, 1e2 and -0.0 satisfy, so they decode as 1, 100
// and 0, where encoding/json alone refuses any number written with a
// fraction or an exponent. A number that has a fraction, or does not fit
// the field, is an error naming the argument with its JSON pointer and the
// Go type, never one of encoding/json's messages about Go struct fields.
//
// Valid input in integer form costs one json.Unmarshal; the rewrite happens
// only when that fails on a number.
func Unmarshal(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	var te *json.UnmarshalTypeError
	if err == nil || !errors.As(err, &te) {
		return err
	}
	if !strings.HasPrefix(te.Value, "number") {
		return typeError(te)
	}
	if fixed, ok := wholeNumbers(data); ok {
		err = json.Unmarshal(fixed, v)
		if err == nil || !errors.As(err, &te) {
			return err
		}
	}
	return typeError(te)
}

// typeError words a number that does not fit its field.
func typeError(te *json.UnmarshalTypeError) error {
	at := "/" + strings.ReplaceAll(te.Field, ".", "/")
	if te.Field == "" {
		at = "(root)"
	}
	if !strings.HasPrefix(te.Value, "number") {
		return fmt.Errorf("%s: a JSON %s does not fit the Go type %s", at, te.Value, te.Type)
	}
	return fmt.Errorf("%s: %s does not fit the Go type %s: an integer must be a whole number within the type's range", at, te.Value, te.Type)
}

// wholeNumbers rewrites every number in data that is a whole number written
// with a fraction or an exponent (1.0, 1e2, -0.0) in integer form, and
// reports whether it changed anything.
func wholeNumbers(data []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	v, changed := rewrite(v)
	if !changed {
		return nil, false
	}
	out, err := json.Marshal(v)
	return out, err == nil
}

func rewrite(v any) (any, bool) {
	changed := false
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e, ok := rewrite(e); ok {
				x[k] = e
				changed = true
			}
		}
	case []any:
		for i, e := range x {
			if e, ok := rewrite(e); ok {
				x[i] = e
				changed = true
			}
		}
	case json.Number:
		if n, ok := integerForm(string(x)); ok && n != string(x) {
			return json.Number(n), true
		}
	}
	return v, changed
}

// integerForm returns num in integer form when it is a whole number. Numbers
// whose exponent is beyond ±400 are left alone: none fits a Go integer, and
// the exact arithmetic would cost time that grows with the exponent.
func integerForm(num string) (string, bool) {
	if !strings.ContainsAny(num, ".eE") {
		return num, true
	}
	if i := strings.IndexAny(num, "eE"); i >= 0 {
		if exp, err := strconv.Atoi(strings.TrimPrefix(num[i+1:], "+")); err != nil || exp > 400 || exp < -400 {
			return "", false
		}
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok || !r.IsInt() {
		return "", false
	}
	return r.Num().String(), true
}

package schema

import (
	"encoding/json"
	"runtime"
	"sync"
	"weak"
)

// memo keeps every compiled schema that something still holds, by the exact
// bytes it was compiled from, so that a schema registered many times — the
// same shape on many tools of a server, the same server's tools listed again
// after a change, an upstream tool checked when listed and again when
// registered — is compiled once. A Schema is immutable, so sharing it is
// safe. The memo holds its schemas weakly: a schema no tool holds any more
// is collected as if the memo were not there, and its entry goes with it.
// Only successes are kept; an error is found again, with the same message,
// by compiling again.
var memo = struct {
	sync.Mutex
	m map[string]weak.Pointer[Schema]
}{m: map[string]weak.Pointer[Schema]{}}

// memoMax bounds the size of what the memo keys on: a schema larger than
// this is compiled each time rather than held twice (once as its key).
const memoMax = 64 << 10

func remembered(raw json.RawMessage) *Schema {
	if len(raw) > memoMax {
		return nil
	}
	memo.Lock()
	wp, ok := memo.m[string(raw)]
	memo.Unlock()
	if !ok {
		return nil
	}
	return wp.Value()
}

func remember(raw json.RawMessage, s *Schema) {
	if len(raw) > memoMax {
		return
	}
	key := string(raw)
	wp := weak.Make(s)
	memo.Lock()
	memo.m[key] = wp
	memo.Unlock()
	runtime.AddCleanup(s, forget, memoEntry{key, wp})
}

type memoEntry struct {
	key string
	wp  weak.Pointer[Schema]
}

// forget removes the entry of a collected schema, unless the key was
// compiled again since and names a live schema.
func forget(e memoEntry) {
	memo.Lock()
	if memo.m[e.key] == e.wp {
		delete(memo.m, e.key)
	}
	memo.Unlock()
}

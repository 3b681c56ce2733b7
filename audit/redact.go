package audit

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lathe-tools/lathe/internal/jsonscan"
)

// Redacted is what a secret is replaced with.
const Redacted = "[redacted]"

// DefaultKeys returns the patterns that match the names of arguments whose
// values are secrets; every [Redactor] applies them. The result is a copy,
// so that no package a program imports can narrow what the audit log hides.
func DefaultKeys() []string { return slices.Clone(defaultKeys) }

// DefaultValues returns the patterns that match secrets inside any string
// value; every [Redactor] applies them. The result is a copy, as for
// [DefaultKeys].
func DefaultValues() []string { return slices.Clone(defaultValues) }

var defaultKeys = []string{
	`(?i)pass(word|wd|phrase)?$`, `(?i)secret`, `(?i)token`, `(?i)api[_-]?key`, `(?i)^auth`, `(?i)credential`,
	`(?i)private[_-]?key`, `(?i)cookie`, `(?i)session[_-]?id`,
}

var defaultValues = []string{
	`\bsk-[A-Za-z0-9_-]{16,}`,                 // API keys of several model vendors
	`\bgh[pousr]_[A-Za-z0-9]{20,}`,            // GitHub tokens
	`\bAKIA[0-9A-Z]{16}\b`,                    // AWS access key ids
	`\bxox[abprs]-[A-Za-z0-9-]{10,}`,          // Slack tokens
	`(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*`, // bearer tokens
	`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`,
	`(?i)\b(password|passwd|secret|token|api[_-]?key)=[^\s&]+`, // key=value in a command line or a URL
}

// Redactor replaces secret-looking values in a call's arguments.
type Redactor struct {
	keys   []*regexp.Regexp
	values []*regexp.Regexp
	// needs[i], where set, is what a string must hold for values[i] to
	// match in it: a cheap test that spares most strings a pass of the
	// pattern (each pass costs most of a microsecond, and every string of
	// every call's arguments meets every pattern). The default patterns
	// have one each; patterns of the configuration have none.
	needs []func(string) bool

	seen      sync.Map // argument name → whether it is a secret's
	seenCount atomic.Int64
}

// defaultNeeds are, in the order of defaultValues, literals without which
// its pattern cannot match.
var defaultNeeds = []func(string) bool{
	func(s string) bool { return strings.Contains(s, "sk-") },
	func(s string) bool { return strings.Contains(s, "gh") },
	func(s string) bool { return strings.Contains(s, "AKIA") },
	func(s string) bool { return strings.Contains(s, "xox") },
	func(s string) bool { return containsFold(s, "bearer") },
	func(s string) bool { return strings.Contains(s, "-----BEGIN ") },
	func(s string) bool { return strings.IndexByte(s, '=') >= 0 },
}

// containsFold reports whether s holds lower, a lower-case ASCII word, in
// any case of its ASCII letters. For "bearer" that is what (?i) matches:
// none of its letters folds to a letter outside ASCII (as k and s do).
func containsFold(s, lower string) bool {
	for i := 0; i+len(lower) <= len(s); i++ {
		j := 0
		for ; j < len(lower); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lower[j] {
				break
			}
		}
		if j == len(lower) {
			return true
		}
	}
	return false
}

// NewRedactor compiles the default rules ([DefaultKeys], [DefaultValues])
// plus extra rules: keys match argument names (at any depth) whose whole
// value is hidden, values match secrets inside strings.
func NewRedactor(keys, values []string) (*Redactor, error) {
	r := &Redactor{}
	for _, k := range slices.Concat(defaultKeys, keys) {
		re, err := regexp.Compile(k)
		if err != nil {
			return nil, fmt.Errorf("audit: redaction key pattern %q: %w", k, err)
		}
		r.keys = append(r.keys, re)
	}
	for i, v := range slices.Concat(defaultValues, values) {
		re, err := regexp.Compile(v)
		if err != nil {
			return nil, fmt.Errorf("audit: redaction value pattern %q: %w", v, err)
		}
		r.values = append(r.values, re)
		var need func(string) bool
		if i < len(defaultNeeds) {
			need = defaultNeeds[i]
		}
		r.needs = append(r.needs, need)
	}
	return r, nil
}

// Redact returns the arguments as JSON text with secrets replaced. Text that
// is not JSON is redacted as one string.
func (r *Redactor) Redact(raw json.RawMessage) string {
	if r == nil {
		r, _ = NewRedactor(nil, nil)
	}
	// Most arguments hold no secret, and most have their strings and
	// numbers written already as encoding/json writes them again. For
	// those the round trip below, which costs microseconds, changes
	// nothing but space and the order of keys: one pass over the text that
	// finds no secret key and no string a value pattern matches gives its
	// answer, and the text itself when a Go client wrote it.
	if s, ok := jsonscan.Marshaled(string(raw), r.publicKey, r.clean); ok {
		return s
	}
	return r.redact(raw)
}

// redact is Redact without its shortcut: it decodes the arguments, hides
// what is secret, and encodes them again.
func (r *Redactor) redact(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return r.text(string(raw))
	}
	b, err := json.Marshal(r.walk(v))
	if err != nil {
		return Redacted
	}
	return string(b)
}

func (r *Redactor) walk(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if r.secretKey(k) {
				x[k] = Redacted
				continue
			}
			x[k] = r.walk(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = r.walk(e)
		}
		return x
	case string:
		return r.text(x)
	}
	return v
}

// publicKey reports whether the values of the argument named k are kept.
func (r *Redactor) publicKey(k string) bool { return !r.secretKey(k) }

func (r *Redactor) secretKey(k string) bool {
	if v, ok := r.seen.Load(k); ok {
		return v.(bool)
	}
	secret := false
	for _, re := range r.keys {
		if re.MatchString(k) {
			secret = true
			break
		}
	}
	// Arguments have few names, met again and again; the answer for each
	// is kept, up to maxSeenKeys of them, so that a call's keys cost a
	// lookup rather than a pass of every key pattern (nine at least, most
	// of them case-insensitive). The patterns never change, so neither
	// does an answer.
	if len(k) <= maxSeenKey && r.seenCount.Load() < maxSeenKeys {
		// A copy is kept: k may be a part of a call's whole arguments,
		// which the memory must not hold on to.
		if _, loaded := r.seen.LoadOrStore(strings.Clone(k), secret); !loaded {
			r.seenCount.Add(1)
		}
	}
	return secret
}

// maxSeenKeys bounds the argument names a Redactor remembers, and
// maxSeenKey the length of one: a model that makes up new names for every
// call must not grow lathe's memory.
const (
	maxSeenKeys = 4096
	maxSeenKey  = 128
)

// clean reports whether no value pattern matches s: whether text leaves
// s as it is.
func (r *Redactor) clean(s string) bool {
	for i, re := range r.values {
		if need := r.needs[i]; need != nil && !need(s) {
			continue
		}
		if re.MatchString(s) {
			return false
		}
	}
	return true
}

func (r *Redactor) text(s string) string {
	for i, re := range r.values {
		if need := r.needs[i]; need != nil && !need(s) {
			continue
		}
		s = re.ReplaceAllString(s, Redacted)
	}
	return s
}

package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxName is the longest tool name OpenAI, Anthropic and Gemini all take.
const maxName = 64

// nameByte reports whether b may appear in a tool name of format f, and
// first whether it may start one. OpenAI and Anthropic take letters,
// digits, underscores and dashes; Gemini also takes dots, but a name must
// start with a letter or an underscore there; MCP takes dots too.
func nameByte(f Format, b byte, first bool) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', b == '_':
		return true
	case '0' <= b && b <= '9', b == '-':
		return !(first && f == Gemini)
	case b == '.':
		return (f == Gemini && !first) || f == MCP
	}
	return false
}

// validName reports whether name is a tool name format f accepts.
func validName(f Format, name string) bool {
	limit := maxName
	if f == MCP {
		limit = 128
	}
	if name == "" || len(name) > limit {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(f, name[i], i == 0) {
			return false
		}
	}
	return true
}

// wireName returns the name a tool goes by in format f: its own name when
// f accepts it, and otherwise the name with every byte f refuses replaced
// by an underscore, cut to fit, and followed by a digest of the whole name,
// so that two names that differ only where they were replaced stay apart.
// [Convert] still checks the names it makes for collisions.
func wireName(f Format, name string) string {
	if validName(f, name) {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "_" + hex.EncodeToString(sum[:4])
	var b strings.Builder
	for i := 0; i < len(name) && b.Len() < maxName-len(suffix); i++ {
		c := name[i]
		if !nameByte(f, c, b.Len() == 0) {
			if b.Len() == 0 && nameByte(f, c, false) {
				b.WriteByte('_') // Gemini: "1st" becomes "_1st"
			} else {
				c = '_'
			}
		}
		if b.Len() < maxName-len(suffix) {
			b.WriteByte(c)
		}
	}
	return b.String() + suffix
}

// gemParam reports whether name is a parameter name Gemini takes: a letter
// or an underscore, then letters, digits and underscores, 64 at most.
func gemParam(name string) bool {
	if name == "" || len(name) > maxName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || (i > 0 && '0' <= c && c <= '9')
		if !ok {
			return false
		}
	}
	return true
}

// gemParamName returns the name a top-level parameter goes by in Gemini,
// made as [wireName] makes tool names.
func gemParamName(name string) string {
	if gemParam(name) {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "_" + hex.EncodeToString(sum[:4])
	var b strings.Builder
	b.WriteByte('p')
	for i := 0; i < len(name) && b.Len() < maxName-len(suffix); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || '0' <= c && c <= '9') {
			c = '_'
		}
		if b.Len() == 1 && c != '_' {
			b.WriteByte('_')
		}
		if b.Len() < maxName-len(suffix) {
			b.WriteByte(c)
		}
	}
	return b.String() + suffix
}

package jsonscan

// maxDepth is the deepest nesting encoding/json takes: json.Valid refuses
// a value nested deeper.
const maxDepth = 10000

// Valid reports whether b is one JSON value, with white space around it or
// not: what json.Valid reports, nesting bound included, without its state
// machine's call per byte. Like json.Valid it checks the grammar, not the
// UTF-8 of strings.
func Valid(b []byte) bool {
	// The open objects and arrays, '{' or '['; most messages need no more
	// than the array's room.
	var room [32]byte
	stack := room[:0]
	i := SkipSpace(b, 0)
	for {
		// A value begins at b[i].
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if len(stack) == maxDepth {
				return false
			}
			stack = append(stack, c)
			i = SkipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' or ']'
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i = memberKey(b, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			if i = validString(b, i); i < 0 {
				return false
			}
		case c == '-' || c >= '0' && c <= '9':
			if i = numberEnd(b, i); i < 0 {
				return false
			}
		case c == 't':
			if i = literal(b, i, "true"); i < 0 {
				return false
			}
		case c == 'f':
			if i = literal(b, i, "false"); i < 0 {
				return false
			}
		case c == 'n':
			if i = literal(b, i, "null"); i < 0 {
				return false
			}
		default:
			return false
		}
		// A value ended before b[i]: what follows is a comma and the next
		// item, the end of the open object or array, or, at the top, the
		// end of b.
		for {
			i = SkipSpace(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			open := stack[len(stack)-1]
			if b[i] == ',' {
				i = SkipSpace(b, i+1)
				if open == '{' {
					if i = memberKey(b, i); i < 0 {
						return false
					}
				}
				break
			}
			if b[i] != open+2 {
				return false
			}
			stack = stack[:len(stack)-1]
			i++
		}
	}
}

// memberKey checks the key of a member and its colon, which begin at b[i],
// and returns where its value begins (after any space); -1 when they are
// not there.
func memberKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = validString(b, i); i < 0 {
		return -1
	}
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return SkipSpace(b, i+1)
}

// validString returns the index just past the string that begins at b[i],
// checking its escapes and that it holds no control character; -1 when it
// is not a string.
func validString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) || !hex(b[i+1]) || !hex(b[i+2]) || !hex(b[i+3]) || !hex(b[i+4]) {
					return -1
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

func hex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// numberEnd returns the index just past the number that begins at b[i],
// -1 when it is not one. The byte after it is for the caller to check.
func numberEnd(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

// literal returns the index just past word, which must begin at b[i]; -1
// when it does not.
func literal(b []byte, i int, word string) int {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}

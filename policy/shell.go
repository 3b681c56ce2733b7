package policy

import (
	"path"
	"strings"
)

// The shell reader below finds the commands a POSIX shell command line
// would run, so that a deny rule such as "rm *" catches rm however it is
// spelled: after any control operator, inside a substitution, quoted or
// escaped, behind a path, assignments, redirections, reserved words,
// wrappers (sudo, env, nice, xargs, find -exec …) and nested shells
// (sh -c, eval). It reads; it never runs anything.
//
// What it cannot read, it reports: a command word that only the running
// shell knows ($CMD, $(…), a glob), a quote or a substitution left open, a
// string handed to sh -c or eval that only the running shell knows, nesting
// past maxShellDepth. A deny rule then cannot say the command is not
// denied, and the call is asked rather than allowed.

// maxShellDepth bounds how deeply substitutions and nested shells are read.
const maxShellDepth = 8

// shellWord is one word of a simple command, its quotes removed.
type shellWord struct {
	text string
	// dynamic: part of the word is an expansion or a substitution, known
	// only when the shell runs.
	dynamic bool
	// glob: the word holds an unquoted *, ? or [, which the shell may
	// expand to file names, or {, which it may expand as {a,b}.
	glob bool
	// assign: the word starts NAME=, unquoted.
	assign bool
}

// shellReader accumulates what one command line holds.
type shellReader struct {
	// commands are the candidate command texts: each simple command with
	// its wrappers peeled off, the command word reduced to its base name,
	// the words joined by single spaces.
	commands []string
	// unsure says why part of the line could not be read; empty if all of
	// it could.
	unsure string
	// size is the length of the texts in commands, which maxShellText
	// bounds: wrappers and nested shells make a candidate of every later
	// word, and a hostile line must not make that quadratic.
	size int
	// seen holds the words that have started a candidate already: every
	// word after a wrapper may start one, and a chain of wrappers would
	// otherwise start each many times over.
	seen map[*shellWord]bool
}

// maxShellText bounds the candidate texts of one command line.
const maxShellText = 1 << 20

// doubt records why the line could not be read; the first reason stays.
func (r *shellReader) doubt(why string) {
	if r.unsure == "" {
		r.unsure = why
	}
}

// readShell reads s as a shell command line.
func readShell(s string) *shellReader {
	r := &shellReader{seen: map[*shellWord]bool{}}
	r.read(s, 0)
	return r
}

// read splits s into simple commands and reads each.
func (r *shellReader) read(s string, depth int) {
	if depth > maxShellDepth {
		r.doubt("substitutions or nested shells go too deep to read")
		return
	}
	var (
		words []shellWord
		cur   strings.Builder
		w     shellWord
		open  bool // a word has begun (an empty quoted word counts)
		redir bool // the next word is a redirection's target
	)
	endWord := func() {
		if !open {
			return
		}
		w.text = cur.String()
		w.assign = w.assign && strings.Contains(w.text, "=")
		if redir {
			redir = false
		} else {
			words = append(words, w)
		}
		cur.Reset()
		w, open = shellWord{}, false
	}
	endCommand := func() {
		endWord()
		r.command(words, depth)
		words = nil
	}
	// sub reads a substitution whose text starts at s[i] and ends before
	// the matching close; it returns the index after the close.
	sub := func(i int, close byte) int {
		end := matchClose(s, i, close)
		if end < 0 {
			r.doubt("a substitution is not closed")
			r.read(s[i:], depth+1)
			return len(s)
		}
		r.read(s[i:end], depth+1)
		open, w.dynamic = true, true
		return end + 1
	}
	// dollar reads what follows a $ at s[i-1]; it returns the next index.
	dollar := func(i int) int {
		switch {
		case i < len(s) && s[i] == '"':
			// $"…" is a double-quoted string, translated: the quote's
			// branch reads it.
			return i
		case i < len(s) && s[i] == '\'':
			// $'…' decodes escapes: \x72m is rm. Its value is left to
			// the running shell.
			j := i + 1
			for j < len(s) && s[j] != '\'' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				r.doubt("a $' quote is not closed")
				return len(s)
			}
			open, w.dynamic = true, true
			return j + 1
		case i < len(s) && s[i] == '(':
			return sub(i+1, ')')
		case i < len(s) && s[i] == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				r.doubt("a ${ is not closed")
				return len(s)
			}
			inner := s[i+1 : i+end]
			if strings.Contains(inner, "$(") || strings.Contains(inner, "`") {
				r.read(inner, depth+1)
			}
			open, w.dynamic = true, true
			return i + end + 1
		case i < len(s) && (isNameByte(s[i]) || strings.IndexByte("@*#?-$!", s[i]) >= 0):
			open, w.dynamic = true, true
			if !isNameByte(s[i]) {
				return i + 1
			}
			for i < len(s) && isNameByte(s[i]) {
				i++
			}
			return i
		}
		cur.WriteByte('$')
		open = true
		return i
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i += 2 // a line continuation joins the lines
		case c == '\\':
			if i+1 < len(s) {
				cur.WriteByte(s[i+1])
			}
			open = true
			i += 2
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				r.doubt("a single quote is not closed")
				cur.WriteString(s[i+1:])
				i = len(s)
				break
			}
			cur.WriteString(s[i+1 : i+1+end])
			open = true
			i += end + 2
		case c == '"':
			open = true
			i++
			for i < len(s) && s[i] != '"' {
				switch {
				case s[i] == '\\' && i+1 < len(s) && s[i+1] == '\n':
					i += 2
				case s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\", s[i+1]) >= 0:
					cur.WriteByte(s[i+1])
					i += 2
				case s[i] == '$' && i+1 < len(s) && (s[i+1] == '\'' || s[i+1] == '"'):
					// Within double quotes, $' and $" are no quotes.
					cur.WriteByte('$')
					i++
				case s[i] == '$':
					i = dollar(i + 1)
				case s[i] == '`':
					i = sub(i+1, '`')
				default:
					cur.WriteByte(s[i])
					i++
				}
			}
			if i >= len(s) {
				r.doubt("a double quote is not closed")
			}
			i++
		case c == '$':
			i = dollar(i + 1)
		case c == '`':
			i = sub(i+1, '`')
		case c == ' ' || c == '\t' || c == '\r':
			endWord()
			i++
		case c == '<' || c == '>':
			// A redirection: a file descriptor number before it is not a
			// word, and the word after it is not an argument.
			if open && !w.dynamic && strings.Trim(cur.String(), "0123456789") == "" {
				cur.Reset()
				open = false
			}
			endWord()
			i++
			if i < len(s) && s[i] == '(' { // process substitution
				i = sub(i+1, ')')
				endWord()
				break
			}
			for i < len(s) && strings.IndexByte("<>&|", s[i]) >= 0 {
				i++
			}
			redir = true
		case strings.IndexByte(";&|\n()", c) >= 0:
			endCommand()
			i++
		default:
			if !open && isNameStart(c) {
				w.assign = true // confirmed when the word ends, if it holds an = before any quote
			}
			if w.assign && !isNameByte(c) && c != '=' && !strings.Contains(cur.String(), "=") {
				w.assign = false
			}
			if strings.IndexByte("*?[{", c) >= 0 {
				w.glob = true // {a,b} is brace expansion
			}
			cur.WriteByte(c)
			open = true
			i++
		}
	}
	endCommand()
}

// matchClose returns the index in s of the byte close that ends a
// substitution whose text starts at i, skipping quoted text and nested
// parentheses; -1 if there is none.
func matchClose(s string, i int, close byte) int {
	level := 0
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case c == close && level == 0:
			return i
		case c == '\'' && close != '`':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return -1
			}
			i += end + 1
		case c == '(' && close == ')':
			level++
		case c == ')' && close == ')':
			level--
		}
	}
	return -1
}

// reserved are the words that may start a command without being one.
var reserved = map[string]bool{
	"!": true, "{": true, "}": true, "if": true, "then": true, "else": true, "elif": true, "fi": true,
	"do": true, "done": true, "while": true, "until": true, "coproc": true,
}

// wrappers run the command that their arguments name. Any later word of
// theirs that is not an option may be that command.
var wrappers = map[string]bool{
	"command": true, "builtin": true, "exec": true, "nohup": true, "setsid": true, "time": true,
	"sudo": true, "doas": true, "env": true, "nice": true, "ionice": true, "timeout": true,
	"stdbuf": true, "xargs": true, "chrt": true, "taskset": true, "unbuffer": true, "flock": true,
	"watch": true, "strace": true, "ltrace": true, "chroot": true, "runuser": true, "su": true,
	"busybox": true, "parallel": true,
}

// shells take a command line as the argument of -c.
var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true, "fish": true,
}

// command records the candidate command texts of one simple command.
func (r *shellReader) command(words []shellWord, depth int) {
	for len(words) > 0 && (words[0].assign || (!words[0].dynamic && reserved[words[0].text])) {
		words = words[1:]
	}
	r.candidates(words, depth)
	for i, w := range words {
		switch {
		case w.text == "-exec" || w.text == "-execdir" || w.text == "-ok" || w.text == "-okdir":
			// find's -exec and -ok run the words after them.
			r.candidates(words[i+1:], depth)
		case w.text == "{" && !w.dynamic:
			// A group after other words: coproc NAME { …; }.
			r.candidates(words[i+1:], depth)
		}
	}
}

// candidates records words as a command, and, when its command word is a
// wrapper or a shell, the commands it runs in turn.
func (r *shellReader) candidates(words []shellWord, depth int) {
	if len(words) == 0 || r.seen[&words[0]] || r.size > maxShellText {
		return
	}
	r.seen[&words[0]] = true
	head := words[0]
	if head.dynamic || head.glob {
		r.doubt("the command " + quoteWord(head) + " is known only when the shell runs it")
		return
	}
	name := path.Base(head.text)
	texts := []string{name}
	for _, w := range words[1:] {
		texts = append(texts, w.text)
	}
	text := strings.Join(texts, " ")
	if r.size += len(text); r.size > maxShellText {
		r.doubt("the command line is too long to read")
		return
	}
	r.commands = append(r.commands, text)
	if depth > maxShellDepth {
		r.doubt("wrappers go too deep to read")
		return
	}
	switch {
	case name == "eval":
		for _, w := range words[1:] {
			if w.dynamic {
				r.doubt("eval runs text known only when the shell runs it")
			}
		}
		r.read(strings.Join(texts[1:], " "), depth+1)
	case shells[name]:
		operand := false
		for i := 1; i < len(words); i++ {
			o := words[i].text
			if strings.HasPrefix(o, "-") && !strings.HasPrefix(o, "--") && strings.Contains(o, "c") && i+1 < len(words) {
				if words[i+1].dynamic {
					r.doubt(name + " -c runs text known only when the shell runs it")
				}
				r.read(words[i+1].text, depth+1)
				operand = true
				break
			}
			if !strings.HasPrefix(o, "-") && !strings.HasPrefix(o, "+") {
				operand = true // a script file, lexical like any other program
				break
			}
		}
		if !operand {
			// echo 'rm -rf ~' | sh: the commands are text the line pipes in.
			r.doubt(name + " reads its commands from its standard input")
		}
	case wrappers[name]:
		for i := 1; i < len(words); i++ {
			if w := words[i]; !strings.HasPrefix(w.text, "-") && !w.assign {
				r.candidates(words[i:], depth+1)
			} else if w.dynamic {
				r.doubt("an option of " + name + " is known only when the shell runs it")
			}
		}
	}
}

func quoteWord(w shellWord) string {
	if w.text == "" {
		return "(a substitution)"
	}
	return `"` + w.text + `"`
}

func isNameStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isNameByte(c byte) bool {
	return isNameStart(c) || (c >= '0' && c <= '9')
}

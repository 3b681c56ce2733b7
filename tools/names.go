package tools

import (
	"strconv"
	"strings"
)

// showName returns a file name (or a path, or a link's target) as the
// listing tools print it. A name of printable UTF-8 without quotes or
// backslashes is shown as it is; any other is shown quoted with Go's
// escapes (strconv.Quote: "a\nb", "\xff"), so that a newline, a control
// character or bytes that are not UTF-8 in one name can never make it read
// as several names, or as a line of another tool's output. A name holding
// " -> ", which list_dir prints between a link and its target, is quoted too.
func showName(name string) string {
	q := strconv.Quote(name)
	if q[1:len(q)-1] == name && !strings.Contains(name, " -> ") {
		return name
	}
	return q
}

package tool

import (
	"fmt"
	"slices"
	"strings"
)

// CheckAnswer reports whether a fits the question: an answer to a select
// question must be one of its Options, as a string; an answer to a boolean
// question a bool or a string a person would type for one (yes, no, true,
// false, y, n, 1, 0, in any case). A text question takes any answer. The
// error says what was wrong and what the question accepts, so that whoever
// answered can answer again.
func (q *Question) CheckAnswer(a any) error {
	switch q.Kind {
	case QuestionSelect:
		s, ok := a.(string)
		if !ok || !slices.Contains(q.Options, s) {
			return fmt.Errorf("answer %s to question %q is not one of its options: %s",
				showAnswer(a), q.ID, strings.Join(q.Options, ", "))
		}
	case QuestionBoolean:
		switch v := a.(type) {
		case bool:
			return nil
		case string:
			switch strings.ToLower(v) {
			case "yes", "no", "true", "false", "y", "n", "1", "0":
				return nil
			}
		}
		return fmt.Errorf("answer %s to question %q is not yes or no", showAnswer(a), q.ID)
	}
	return nil
}

func showAnswer(a any) string {
	if s, ok := a.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%v", a)
}

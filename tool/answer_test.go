package tool

import (
	"strings"
	"testing"
)

func TestCheckAnswer(t *testing.T) {
	sel := &Question{ID: "env", Kind: QuestionSelect, Options: []string{"staging", "prod"}}
	yn := &Question{ID: "sure", Kind: QuestionBoolean}
	text := &Question{ID: "name", Kind: QuestionText}
	for _, c := range []struct {
		q    *Question
		a    any
		want string // part of the error; "" for none
	}{
		{sel, "prod", ""},
		{sel, "moon", `answer "moon" to question "env" is not one of its options: staging, prod`},
		{sel, "Prod", "not one of its options"},
		{sel, true, "answer true to question"},
		{yn, true, ""},
		{yn, "No", ""},
		{yn, "y", ""},
		{yn, "maybe", `answer "maybe" to question "sure" is not yes or no`},
		{yn, 2.0, "not yes or no"},
		{text, "anything", ""},
		{text, 42.0, ""},
	} {
		err := c.q.CheckAnswer(c.a)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s = %#v: %v, want no error", c.q.ID, c.a, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s = %#v: %v, want an error containing %q", c.q.ID, c.a, err, c.want)
		}
	}
}

package linelog_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/internal/linelog"
)

func TestLines(t *testing.T) {
	for _, tc := range []struct {
		max    int
		writes []string
		want   []string
	}{
		{0, []string{"a\nb", "c\n", "d"}, []string{"a", "bc"}},
		{4, []string{"abcdefghij\n"}, []string{"abcdefghij"}},
		{4, []string{"abcdefghij"}, []string{"abcd", "efgh"}},
		{4, []string{"ab", "cdefg"}, []string{"abcd"}},
		{0, []string{strings.Repeat("x", 10000) + "\n"}, []string{strings.Repeat("x", 10000)}},
	} {
		var got []string
		w := linelog.New(tc.max, func(l []byte) { got = append(got, string(l)) })
		for _, s := range tc.writes {
			if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
				t.Fatalf("Write(%q) = %d, %v", s, n, err)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("max %d, writes %q: lines %q, want %q", tc.max, tc.writes, got, tc.want)
		}
	}
}

package lathe

import "testing"

func TestEditDistance(t *testing.T) {
	var rows [3][]int
	for i := range rows {
		rows[i] = make([]int, 2*64+1)
	}
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"read_file", "read_file", 0},
		{"raed_file", "read_file", 1},
		{"read_fil", "read_file", 1},
		{"read_files", "read_file", 1},
		{"reed_file", "read_file", 1},
		{"read_dir", "read_file", 3},
		{"", "abc", 3},
		{"abc", "", 3},
		{"ca", "abc", 3},
	} {
		if got := editDistance(c.a, c.b, 10, &rows); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		// Under a smaller limit the answer is exact up to the limit and
		// above it past.
		if got := editDistance(c.a, c.b, 1, &rows); (c.want <= 1) != (got <= 1) || c.want <= 1 && got != c.want {
			t.Errorf("editDistance(%q, %q, limit 1) = %d, want %d or above 1", c.a, c.b, got, c.want)
		}
	}
}

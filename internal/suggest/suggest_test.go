package suggest

import "testing"

func TestDistanceCountsEdits(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"TableEndpoint", "TableEndpoint", 0},
		{"TableEndpont", "TableEndpoint", 1},
		{"htp", "http", 1},
		{"AccountKey", "AccountName", 4},
		{"", "abc", 3},
		{"kitten", "sitting", 3},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", c.b, c.a, got, c.want)
		}
	}
}

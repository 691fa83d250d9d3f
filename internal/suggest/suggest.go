// Package suggest finds the name a user most likely meant, for errors that name a
// misspelled key or property ("did you mean TableEndpoint?").
package suggest

// Distance is the Levenshtein distance of a and b, by bytes: the names it compares are
// identifiers and connection-string keys.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

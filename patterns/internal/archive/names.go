package archive

import "strings"

// TableFolder is the folder of a table's archives in a container: its name in lower
// case. Table names are case-insensitive, so every spelling of one table names one
// folder.
func TableFolder(table string) string { return strings.ToLower(table) }

// EscapeSegment percent-escapes every byte of s outside [A-Za-z0-9_~-], so no key can
// produce a path segment of its own choosing ("." or "..", an empty segment, a '/', a
// trailing dot), and two keys never share an escaped form.
func EscapeSegment(s string) string {
	const hexDigits = "0123456789ABCDEF"
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '~' {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
	}
	return string(b)
}

package keys

import (
	"unicode/utf8"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// forbidden reports whether r may not appear in a PartitionKey or RowKey (the Table service data model):
// '/', '\', '#', '?', U+0000 to U+001F and U+007F to U+009F.
func forbidden(r rune) bool {
	switch {
	case r <= 0x1F, r >= 0x7F && r <= 0x9F:
		return true
	case r == '/', r == '\\', r == '#', r == '?':
		return true
	}
	return false
}

// Validate reports whether key contains only characters a PartitionKey or RowKey may
// contain: valid UTF-8 without '/', '\', '#', '?', U+0000 to U+001F or U+007F to U+009F.
// It does not check the 1 KiB size limit (the codec does, in the unit the service counts).
//
// It returns an *errs.InvalidInputError naming the first offending character and its byte
// offset, or nil.
func Validate(key string) error {
	return validateChars("key", key)
}

func validateChars(field, s string) error {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return errs.Invalid(field, "invalid UTF-8 at byte %d", i)
			}
		}
		if forbidden(r) {
			return errs.Invalid(field, "character %U at byte %d is not allowed in a key", r, i)
		}
	}
	return nil
}

package codec

import (
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

// Service limits (the Table service data model). Sizes are in bytes; strings and keys are measured as the
// service stores them, in UTF-16 (2 bytes per code unit, 4 for a character outside the BMP).
const (
	// MaxKeyBytes is the size limit of a PartitionKey or RowKey: 1 KiB of UTF-16, that is
	// 512 characters of the BMP.
	MaxKeyBytes = 1024
	// MaxProperties is the number of custom properties an entity may have
	// (255 with PartitionKey, RowKey and Timestamp).
	MaxProperties = 252
	// MaxEntityBytes is the size limit of a whole entity, measured by the service's formula
	// (see doc.go, "Entity size").
	MaxEntityBytes = 1 << 20
	// MaxStringBytes is the size limit of an Edm.String value, in UTF-16 bytes
	// (about 32 K characters).
	MaxStringBytes = 64 << 10
	// MaxBinaryBytes is the size limit of an Edm.Binary value, in bytes.
	MaxBinaryBytes = 64 << 10
	// MaxPropertyNameChars is the length limit of a property name, in UTF-16 code units.
	MaxPropertyNameChars = 255
)

// The Edm.DateTime range: 1601-01-01T00:00:00Z to 9999-12-31T23:59:59.9999999Z.
var (
	minDateTime = time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)
	maxDateTime = time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)
)

// utf16Units measures s in UTF-16 code units; ok is false if s is not valid UTF-8
// (such a string cannot be stored without being altered).
func utf16Units(s string) (n int, ok bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return n, false
		}
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
		i += size
	}
	return n, true
}

// ValidateKey checks a PartitionKey or RowKey value against the service rules: valid UTF-8,
// at most MaxKeyBytes bytes of UTF-16, none of / \ # ?, no control character U+0000–U+001F
// or U+007F–U+009F. The empty string is a valid key. field ("PartitionKey" or "RowKey")
// names the key in the error, an *InvalidInputError wrapping ErrInvalidInput.
func ValidateKey(field, value string) error {
	if err := validateKey(field, value); err != nil {
		return err
	}
	return nil
}

func validateKey(field, value string) *InvalidInputError {
	units := 0
	for i := 0; i < len(value); {
		c := value[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '/' || c == '\\' || c == '#' || c == '?':
				return invalid("", field, "key contains the forbidden character "+strconv.QuoteRune(rune(c))+" at byte "+strconv.Itoa(i))
			case c < 0x20 || c == 0x7f:
				return invalid("", field, "key contains the control character "+strconv.QuoteRune(rune(c))+" at byte "+strconv.Itoa(i))
			}
			units++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(value[i:])
		if r == utf8.RuneError && size == 1 {
			return invalid("", field, "key is not valid UTF-8 at byte "+strconv.Itoa(i))
		}
		if r >= 0x80 && r <= 0x9f {
			return invalid("", field, "key contains the control character "+strconv.QuoteRune(r)+" at byte "+strconv.Itoa(i))
		}
		if r >= 0x10000 {
			units += 2
		} else {
			units++
		}
		i += size
	}
	if units*2 > MaxKeyBytes {
		return tooLarge("", field, "key longer than 1 KiB of UTF-16", units*2, MaxKeyBytes)
	}
	return nil
}

// ValidateTableName checks a table name: ^[A-Za-z][A-Za-z0-9]{2,62}$ and not the reserved
// name "tables" (in any case). The error is an *InvalidInputError with Field "table name"
// wrapping ErrInvalidInput.
func ValidateTableName(name string) error {
	const field = "table name"
	if len(name) < 3 || len(name) > 63 {
		return tooLarge("", field, "a table name has 3 to 63 characters", len(name), 63)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		digit := c >= '0' && c <= '9'
		if i == 0 && !letter {
			return invalid("", field, strconv.Quote(name)+" must start with a letter")
		}
		if !letter && !digit {
			return invalid("", field, strconv.Quote(name)+" may contain only letters and digits")
		}
	}
	if len(name) == 6 && (name[0]|0x20) == 't' && (name[1]|0x20) == 'a' && (name[2]|0x20) == 'b' &&
		(name[3]|0x20) == 'l' && (name[4]|0x20) == 'e' && (name[5]|0x20) == 's' {
		return invalid("", field, strconv.Quote(name)+" is reserved")
	}
	return nil
}

// ValidateContainerName checks a blob container name: 3 to 63 lowercase letters, digits
// and dashes, starting and ending with a letter or digit, without two dashes in a row. The
// error is an *InvalidInputError with Field "container name".
func ValidateContainerName(name string) error {
	return validateDNSName("container name", name)
}

// ValidateQueueName checks a queue name: the same rules as a container name. The error is
// an *InvalidInputError with Field "queue name".
func ValidateQueueName(name string) error {
	return validateDNSName("queue name", name)
}

// validateDNSName checks the naming rule that blob containers and queues share.
func validateDNSName(field, name string) error {
	if len(name) < 3 || len(name) > 63 {
		return tooLarge("", field, "a name has 3 to 63 characters", len(name), 63)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(name)-1 && name[i-1] != '-':
		default:
			return invalid("", field, strconv.Quote(name)+" must be lowercase letters, digits and single inner dashes")
		}
	}
	return nil
}

// ValidatePropertyName checks a property name: C#-identifier-like (a letter or '_' first,
// then letters, digits, '_' and combining marks; no dash, dot, '@' or space), at most 255
// UTF-16 code units. System names (PartitionKey, RowKey, Timestamp) pass: they are valid
// names, reserved only as custom properties. The error is an *InvalidInputError wrapping
// ErrInvalidInput.
func ValidatePropertyName(name string) error {
	if err := validatePropertyName("", name); err != nil {
		return err
	}
	return nil
}

func validatePropertyName(typ, name string) *InvalidInputError {
	if name == "" {
		return invalid(typ, name, "empty property name")
	}
	units := 0
	for i, r := range name {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(name[i:]); size == 1 {
				return invalid(typ, name, "property name is not valid UTF-8")
			}
		}
		ok := r == '_' || unicode.IsLetter(r)
		if i > 0 && !ok {
			ok = unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc, unicode.Pc)
		}
		if !ok {
			return invalid(typ, name, "property name must be an identifier (letter or '_' first, then letters, digits or '_'); found "+strconv.QuoteRune(r))
		}
		if r >= 0x10000 {
			units += 2
		} else {
			units++
		}
	}
	if units > MaxPropertyNameChars {
		return tooLarge(typ, name, "property name longer than 255 characters", units, MaxPropertyNameChars)
	}
	return nil
}

// isSystemName reports the names a custom property may not take.
func isSystemName(name string) bool {
	return name == "PartitionKey" || name == "RowKey" || name == "Timestamp"
}

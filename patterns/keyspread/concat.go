package keyspread

import (
	"fmt"
	"strconv"

	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// Field is one column of a concatenated key (Tablestore's primary key design guide, "連結パーティションキー").
type Field struct {
	// Name names the field in errors.
	Name string
	// Digits > 0 makes the field a non-negative integer, zero-padded to Digits digits so
	// that numbers sort as strings in numeric order (Tablestore's primary key design guide: DeviceID 0 to 999999 is
	// padded to 6 digits). 0 makes it a string.
	Digits int
}

// Concat builds a partition key from several columns, Tablestore's concatenated partition
// key: integers zero-padded to a fixed width and parts joined with a separator that sorts
// below every character of the parts, so that keys sort exactly as the tuples of their
// values. Tablestore's primary key design guide chooses ',' for parts made of letters and digits; Concat uses the
// escaped encoding of keys.Join (separator '!', anything else escaped), which keeps the
// order for any string parts:
//
//	DeviceID 54, SellerID "a100",  CardID 6777  ->  "000054!a100!0006777"
//	DeviceID 54, SellerID "a1001", CardID 6777  ->  "000054!a1001!0006777"   (after, as 'a100' < 'a1001')
//
// A Concat is safe for concurrent use.
type Concat struct{ fields []Field }

// NewConcat returns a Concat of the fields, in order.
//
// Errors: errs.ErrInvalidInput for no fields or a Digits out of 0 to keys.MaxPadWidth.
func NewConcat(fields ...Field) (Concat, error) {
	if len(fields) == 0 {
		return Concat{}, errs.Invalid("fields", "at least one field is required")
	}
	for _, f := range fields {
		if f.Digits < 0 || f.Digits > keys.MaxPadWidth {
			return Concat{}, errs.Invalid("Field "+f.Name, "Digits must be 0 (a string) to %d, got %d", keys.MaxPadWidth, f.Digits)
		}
	}
	return Concat{fields: append([]Field(nil), fields...)}, nil
}

// Key returns the key of one value per field: an integer (int, int8 to int64, uint8 to
// uint32) for a padded field, a string for the others.
//
// Errors: errs.ErrInvalidInput for a wrong number of values, a value of the wrong kind, a
// negative number or one wider than its Digits.
func (c Concat) Key(values ...any) (string, error) {
	if len(values) != len(c.fields) {
		return "", errs.Invalid("values", "want %d (one per field), got %d", len(c.fields), len(values))
	}
	return c.Partial(values...)
}

// Partial returns the key of the leading fields only: every full key whose leading values
// are these sorts at or after it and before the Partial of the next values, so two
// Partials bound a range of partitions (filter.PartitionRange), e.g. every DeviceID from
// 15 to 99.
//
// Errors: as Key, for up to len(fields) values.
func (c Concat) Partial(values ...any) (string, error) {
	if len(values) > len(c.fields) {
		return "", errs.Invalid("values", "want at most %d, got %d", len(c.fields), len(values))
	}
	parts := make([]string, len(values))
	for i, v := range values {
		s, err := c.part(c.fields[i], v)
		if err != nil {
			return "", err
		}
		parts[i] = s
	}
	return keys.Join(parts...), nil
}

// Prefix returns what every full key with these leading values starts with (Partial and
// the separator), for filter.PartitionPrefix. With no values it is "".
//
// Errors: as Partial; also for as many values as fields (that is a full key, not a
// prefix).
func (c Concat) Prefix(values ...any) (string, error) {
	if len(values) == 0 {
		return "", nil
	}
	if len(values) >= len(c.fields) {
		return "", errs.Invalid("values", "a prefix has fewer values than the %d fields", len(c.fields))
	}
	p, err := c.Partial(values...)
	if err != nil {
		return "", err
	}
	return p + "!", nil
}

// Parse returns the fields of a key made by Key, as strings (padded integers without
// their padding).
//
// Errors: errs.ErrInvalidInput when key is not a key of c.
func (c Concat) Parse(key string) ([]string, error) {
	parts, err := keys.Split(key)
	if err != nil {
		return nil, err
	}
	if len(parts) != len(c.fields) {
		return nil, errs.Invalid("key", "%q has %d parts, want %d", key, len(parts), len(c.fields))
	}
	for i, f := range c.fields {
		if f.Digits == 0 {
			continue
		}
		if len(parts[i]) != f.Digits {
			return nil, errs.Invalid("Field "+f.Name, "%q is not %d digits", parts[i], f.Digits)
		}
		n, err := keys.ParsePad(parts[i])
		if err != nil {
			return nil, err
		}
		parts[i] = strconv.FormatInt(n, 10)
	}
	return parts, nil
}

func (c Concat) part(f Field, v any) (string, error) {
	if f.Digits == 0 {
		s, ok := v.(string)
		if !ok {
			return "", errs.Invalid("Field "+f.Name, "want a string, got %T", v)
		}
		return s, nil
	}
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int8:
		n = int64(x)
	case int16:
		n = int64(x)
	case int32:
		n = int64(x)
	case int64:
		n = x
	case uint8:
		n = int64(x)
	case uint16:
		n = int64(x)
	case uint32:
		n = int64(x)
	default:
		return "", errs.Invalid("Field "+f.Name, "want an integer, got %T", v)
	}
	s, err := keys.Pad(n, f.Digits)
	if err != nil {
		return "", fmt.Errorf("field %s: %w", f.Name, err)
	}
	return s, nil
}

package compoundkey

import (
	"github.com/tablepatterns/tablepatterns/codec/keys"
	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// Layout is the shape of a compound RowKey: a type prefix, then a fixed number of parts
// ("empid_000123_2012" is the prefix "empid" and the parts "000123" and "2012"). It is
// built and parsed with package keys. A Layout is a small value, safe for concurrent use.
type Layout struct {
	prefix string
	parts  int
	c      keys.Compound
}

// LayoutOptions configures NewLayout. nil means the zero value.
type LayoutOptions struct {
	// Escaped selects the escaped, order-preserving encoding of package keys ('!' between
	// parts, every other troublesome character escaped) instead of the guide's readable
	// "_". Use it when parts may contain "_" or characters keys cannot hold, or differ in
	// width: the readable form keeps the order of the parts only for fixed-width parts such
	// as keys.Pad numbers (Tablestore's primary key design guide: the separator must sort below every character of the
	// parts).
	Escaped bool
}

// NewLayout returns the layout prefix + parts parts, e.g. NewLayout("empid", 2, nil) for
// the guide's "empid_000123_2012". prefix may be empty (no type prefix).
//
// Errors: errs.ErrInvalidInput when parts is below 1 or prefix cannot be part of such a key
// (it contains the separator or a character keys cannot hold).
func NewLayout(prefix string, parts int, opts *LayoutOptions) (Layout, error) {
	l := Layout{prefix: prefix, parts: parts}
	if opts == nil || !opts.Escaped {
		l.c = keys.MustNew("_")
	}
	if parts < 1 {
		return Layout{}, errs.Invalid("parts", "a compound key needs at least 1 part, got %d", parts)
	}
	if prefix != "" {
		if _, err := l.c.Join(prefix); err != nil {
			return Layout{}, err
		}
	}
	return l, nil
}

// MustLayout is NewLayout for package-level variables initialised with constants; it
// panics on an error.
func MustLayout(prefix string, parts int, opts *LayoutOptions) Layout {
	l, err := NewLayout(prefix, parts, opts)
	if err != nil {
		panic(err)
	}
	return l
}

// Parts returns the number of parts after the prefix.
func (l Layout) Parts() int { return l.parts }

func (l Layout) all(parts []string) []string {
	if l.prefix == "" {
		return parts
	}
	return append([]string{l.prefix}, parts...)
}

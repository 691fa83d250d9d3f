package filter

import (
	"strings"
	"unicode"
	"unicode/utf16"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// MaxComparisons is the most discrete comparisons the Table service accepts in one $filter
// ("no more than 15 discrete comparisons are permitted within a $filter string", Query
// Entities reference). Azurite does not enforce it; And and Or do, through Err.
const MaxComparisons = 15

// MaxPropertyNameLength is the longest property name the service accepts, in UTF-16 code
// units.
const MaxPropertyNameLength = 255

// invalidText is what String returns for an Expr whose Err is not nil. It is not a valid
// OData expression, so a caller who sends it despite the error gets a 400 from the service
// rather than a query that means something else; it never contains caller input.
const invalidText = "!invalid-filter!"

type kind uint8

const (
	kindNone kind = iota // the zero Expr: no filter
	kindCmp              // Property op literal
	kindAnd
	kindOr
	kindNot
)

// Expr is an immutable filter expression for the Table service's $filter query option.
//
// The zero Expr means "no filter": String returns "" and And and Or skip it. An Expr built
// from invalid input carries the first error, reported by Err; its String must not be sent.
// Expr values are comparable, cheap to copy and safe for concurrent use.
type Expr struct {
	text string
	kind kind
	n    int // discrete comparisons, checked against MaxComparisons
	err  error
	// terms lists the comparisons as "Property\x00Edm.Type\x01" records: a string, so
	// that Expr stays comparable. Property names never contain either separator.
	terms string
}

// Term is one comparison of an Expr: the property compared and the EDM type of the literal
// it is compared with.
type Term struct {
	// Property is the property name.
	Property string
	// Type is the literal's EDM type: "Edm.String", "Edm.Boolean", "Edm.Int32",
	// "Edm.Int64", "Edm.Double", "Edm.DateTime", "Edm.Binary" or "Edm.Guid".
	Type string
}

// Terms returns the comparisons of e in order, one per discrete comparison (a property
// compared twice appears twice); nil for the zero Expr and for an invalid one. Typed
// tables (repo.Table[T]) check them against T's schema before sending a query.
func (e Expr) Terms() []Term {
	if e.err != nil || e.terms == "" {
		return nil
	}
	var out []Term
	for rec := range strings.SplitSeq(strings.TrimSuffix(e.terms, "\x01"), "\x01") {
		prop, typ, _ := strings.Cut(rec, "\x00")
		out = append(out, Term{Property: prop, Type: typ})
	}
	return out
}

// String returns the OData text of e, ready for aztables' ListEntitiesOptions.Filter, which
// URL-encodes it: do not escape it again.
//
// It returns "" for the zero Expr and a fixed text the service rejects for an invalid one;
// check Err first.
func (e Expr) String() string {
	if e.err != nil {
		return invalidText
	}
	return e.text
}

// Err returns the first error met while building e, or nil. A non-nil error is an
// *errs.InvalidInputError wrapping errs.ErrInvalidInput: an invalid property name, an
// unsupported or invalid value (NaN, invalid UTF-8, malformed GUID, DateTime out of range),
// Not of the zero Expr, or more than MaxComparisons comparisons.
func (e Expr) Err() error { return e.err }

// IsZero reports whether e is the zero Expr (no filter). An invalid Expr is not zero.
func (e Expr) IsZero() bool { return e.kind == kindNone && e.err == nil }

// Comparisons returns the number of discrete comparisons in e, the measure the service
// limits to MaxComparisons.
func (e Expr) Comparisons() int { return e.n }

// And returns the conjunction of exprs. Zero operands are skipped, so a filter can be built
// up from the zero Expr; with no non-zero operand the result is the zero Expr, with one it is
// that operand unchanged. Operands are parenthesised, nested Ands are flattened:
//
//	(PartitionKey eq 'Sales') and (RowKey eq '2')
//
// The result carries the first operand error, or an error if it has more than
// MaxComparisons comparisons.
func And(exprs ...Expr) Expr { return join(kindAnd, " and ", exprs) }

// Or returns the disjunction of exprs, with the same rules as And. A zero operand is skipped
// (it means "absent", not "true").
//
// The service serves an Or over RowKey values as a partition scan, not as point or range
// queries: prefer separate point queries when there are few keys.
func Or(exprs ...Expr) Expr { return join(kindOr, " or ", exprs) }

func join(k kind, word string, exprs []Expr) Expr {
	var (
		b      strings.Builder
		terms  strings.Builder
		count  int
		n      int
		single Expr
	)
	for _, e := range exprs {
		if e.IsZero() {
			continue
		}
		if e.err != nil {
			return Expr{err: e.err}
		}
		if count > 0 {
			b.WriteString(word)
		}
		count++
		n += e.n
		terms.WriteString(e.terms)
		single = e
		if e.kind == k {
			// Same associative operator: parentheses would add nothing.
			b.WriteString(e.text)
		} else {
			b.WriteByte('(')
			b.WriteString(e.text)
			b.WriteByte(')')
		}
	}
	switch {
	case count == 0:
		return Expr{}
	case count == 1:
		return single
	case n > MaxComparisons:
		return Expr{err: errs.TooLarge("filter", "too many discrete comparisons", n, MaxComparisons)}
	}
	return Expr{text: b.String(), kind: k, n: n, terms: terms.String()}
}

// Not returns the negation of e: not (e). Not of the zero Expr is an error, since "not no
// filter" has no meaning the caller is likely to want; an invalid e stays invalid.
func Not(e Expr) Expr {
	switch {
	case e.err != nil:
		return Expr{err: e.err}
	case e.IsZero():
		return Expr{err: errs.Invalid("filter", "Not of an empty expression")}
	}
	return Expr{text: "not (" + e.text + ")", kind: kindNot, n: e.n, terms: e.terms}
}

// Eq returns the comparison prop eq v. prop must be a valid property name (see doc.go);
// the Go type of v selects its EDM literal:
//
//	string               'text'  (single quotes doubled; must be valid UTF-8)
//	bool                 true, false
//	int8..int32, int,    42      (Edm.Int32; int must fit in 32 bits)
//	uint8, uint16
//	int64, uint32        42L     (Edm.Int64)
//	float32, float64     42.0, 1.5E+21 (Edm.Double; NaN and infinities are refused)
//	time.Time            datetime'2024-01-02T03:04:05.1234567Z' (UTC, 100 ns, years 1601-9999)
//	[]byte               X'0a1b' (Edm.Binary)
//	GUID                 guid'...' (Edm.Guid; validated)
//
// Named types with these underlying kinds (type Dept string) are accepted, except for
// time.Time, which must be the time.Time type itself. Anything else, nil included, makes an
// invalid Expr. The literal's type must match the stored property's type for the service to
// match it.
func Eq(prop string, v any) Expr { return compare(prop, "eq", v) }

// Ne returns the comparison prop ne v; see Eq for prop and v. The service matches only
// entities that have the property: an entity without prop is not "not equal".
func Ne(prop string, v any) Expr { return compare(prop, "ne", v) }

// Gt returns the comparison prop gt v; see Eq for prop and v.
func Gt(prop string, v any) Expr { return compare(prop, "gt", v) }

// Ge returns the comparison prop ge v; see Eq for prop and v.
func Ge(prop string, v any) Expr { return compare(prop, "ge", v) }

// Lt returns the comparison prop lt v; see Eq for prop and v.
func Lt(prop string, v any) Expr { return compare(prop, "lt", v) }

// Le returns the comparison prop le v; see Eq for prop and v.
func Le(prop string, v any) Expr { return compare(prop, "le", v) }

func compare(prop, op string, v any) Expr {
	if err := checkName(prop); err != nil {
		return Expr{err: err}
	}
	lit, err := literal(prop, v)
	if err != nil {
		return Expr{err: err}
	}
	return Expr{text: prop + " " + op + " " + lit, kind: kindCmp, n: 1, terms: prop + "\x00" + edmOf(lit) + "\x01"}
}

// edmOf returns the EDM type of a literal rendered by literal.
func edmOf(lit string) string {
	switch {
	case strings.HasPrefix(lit, "'"):
		return "Edm.String"
	case lit == "true" || lit == "false":
		return "Edm.Boolean"
	case strings.HasPrefix(lit, "datetime'"):
		return "Edm.DateTime"
	case strings.HasPrefix(lit, "guid'"):
		return "Edm.Guid"
	case strings.HasPrefix(lit, "X'"):
		return "Edm.Binary"
	case strings.HasSuffix(lit, "L"):
		return "Edm.Int64"
	case strings.ContainsAny(lit, ".E"):
		return "Edm.Double"
	}
	return "Edm.Int32"
}

// reserved holds the words an OData parser would read as something other than a property
// name: operators, boolean and null literals, and the special doubles. They are refused in
// any letter case, because some servers (Azurite, the Cosmos DB Table API) may not be
// case-sensitive the way the Table service is.
var reserved = map[string]bool{
	"and": true, "or": true, "not": true,
	"eq": true, "ne": true, "gt": true, "ge": true, "lt": true, "le": true,
	"add": true, "sub": true, "mul": true, "div": true, "mod": true,
	"true": true, "false": true, "null": true, "nan": true, "inf": true,
}

// checkName accepts C#-identifier-like names: a letter or '_' first, then letters, decimal
// digits or '_', at most MaxPropertyNameLength UTF-16 code units, not a reserved word. Such
// a name cannot contain a space, a quote or a parenthesis, so it is always one token.
func checkName(name string) error {
	if name == "" {
		return errs.Invalid("property name", "empty")
	}
	size := 0
	for i, r := range name {
		ok := r == '_' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))
		if !ok { // also catches invalid UTF-8, decoded as U+FFFD
			return errs.Invalid("property name", "%.64q is not an identifier (a letter or '_', then letters, digits or '_')", name)
		}
		size += utf16.RuneLen(r)
	}
	if size > MaxPropertyNameLength {
		return errs.TooLarge("property name", "too long (UTF-16 code units)", size, MaxPropertyNameLength)
	}
	if reserved[strings.ToLower(name)] {
		return errs.Invalid("property name", "%q is an OData keyword", name)
	}
	return nil
}

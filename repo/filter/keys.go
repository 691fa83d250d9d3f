package filter

import (
	"unicode/utf8"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// The system key properties.
const (
	partitionKey = "PartitionKey"
	rowKey       = "RowKey"
)

// PartitionKey returns PartitionKey eq 'pk': a partition scan, the third most efficient
// query. Combine it with property conditions for the guide's "partition scan" shape:
//
//	filter.And(filter.PartitionKey("Sales"), filter.Eq("LastName", "Smith"))
//
// Key values are not checked against the key rules (no '/', '\', '#', '?' or control
// characters): a value no key can have simply matches nothing.
func PartitionKey(pk string) Expr { return Eq(partitionKey, pk) }

// Point returns (PartitionKey eq 'pk') and (RowKey eq 'rk'): a point query, the most
// efficient query there is. repo's point get is cheaper still (no query, a 404 instead of
// an empty page), so use this only where a filter is required.
func Point(pk, rk string) Expr { return And(PartitionKey(pk), Eq(rowKey, rk)) }

// RowKeyRange returns the range query PartitionKey eq pk and lo <= RowKey < hi: lo is
// inclusive and hi exclusive, so adjacent ranges tile a partition without overlap. An empty
// lo or hi leaves that end open (the empty string is already the smallest key, so an empty
// lo loses nothing); with both empty this is PartitionKey(pk). If lo >= hi it matches
// nothing. Keys compare as strings: pad numbers to a fixed width.
func RowKeyRange(pk, lo, hi string) Expr {
	return And(PartitionKey(pk), keyRange(rowKey, lo, hi))
}

// RowKeyPrefix returns the range query for the entities of partition pk whose RowKey starts
// with prefix: PartitionKey eq pk and RowKey ge prefix and RowKey lt end, where end is the
// smallest string after every string with that prefix (the last character incremented; a
// last character of U+10FFFF is dropped and the one before incremented). An empty prefix,
// or one made only of U+10FFFF, leaves the upper end open.
//
// The bound is exact in code point order, the order of Go's string comparison. See doc.go
// for the rare prefixes (ending in U+D7FF, U+FFFF or U+10FFFF) where a server comparing
// UTF-16 code units would differ. A prefix that is not valid UTF-8 makes an invalid Expr.
func RowKeyPrefix(pk, prefix string) Expr {
	return And(PartitionKey(pk), keyPrefix(rowKey, prefix))
}

// PartitionRange returns lo <= PartitionKey < hi, a scan of a range of partitions; the ends
// behave as in RowKeyRange. With both empty it is the zero Expr: a table scan.
func PartitionRange(lo, hi string) Expr { return keyRange(partitionKey, lo, hi) }

// PartitionPrefix returns the partitions whose PartitionKey starts with prefix, with the
// bound computed as in RowKeyPrefix; an empty prefix gives the zero Expr (a table scan).
// It suits hash-prefixed or compound partition keys ("03|Sales").
func PartitionPrefix(prefix string) Expr { return keyPrefix(partitionKey, prefix) }

func keyRange(prop, lo, hi string) Expr {
	var lower, upper Expr
	if lo != "" {
		lower = Ge(prop, lo)
	}
	if hi != "" {
		upper = Lt(prop, hi)
	}
	return And(lower, upper)
}

func keyPrefix(prop, prefix string) Expr {
	if !utf8.ValidString(prefix) {
		return Expr{err: errs.Invalid(prop, "prefix is not valid UTF-8")}
	}
	if prefix == "" {
		return Expr{}
	}
	lower := Ge(prop, prefix)
	end, ok := prefixEnd(prefix)
	if !ok {
		return lower
	}
	return And(lower, Lt(prop, end))
}

// prefixEnd returns the smallest valid UTF-8 string greater, in code point order, than
// every string that starts with prefix, and false if there is none (prefix is empty or all
// U+10FFFF). prefix must be valid UTF-8.
func prefixEnd(prefix string) (string, bool) {
	for prefix != "" {
		r, size := utf8.DecodeLastRuneInString(prefix)
		prefix = prefix[:len(prefix)-size]
		if r == utf8.MaxRune {
			continue // no character follows it: carry into the previous one
		}
		r++
		if r == 0xD800 {
			r = 0xE000 // surrogates are not characters and never occur in valid UTF-8
		}
		return prefix + string(r), true
	}
	return "", false
}

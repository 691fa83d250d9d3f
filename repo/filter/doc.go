// Package filter builds OData $filter expressions for the Table service that untrusted input
// cannot change the structure of.
//
// # The query shapes of the design guide
//
// The guide ranks queries by how much of the clustered (PartitionKey, RowKey) index they
// use. This package has one constructor per shape:
//
//	point query       Point("Sales", "2")                      (PartitionKey eq 'Sales') and (RowKey eq '2')
//	range query       RowKeyRange("Sales", "S", "T")           ... and (RowKey ge 'S') and (RowKey lt 'T')
//	                  RowKeyPrefix("Sales", "S")               the same range, computed from a prefix
//	partition scan    And(PartitionKey("Sales"), Eq("LastName", "Smith"))
//	table scan        Eq("LastName", "Jones")                  no PartitionKey: every partition is read
//
// A point query is the most efficient; a range query next; a partition scan reads the whole
// partition and filters on the server; a table scan reads every partition. An Or over RowKey
// values (PartitionKey eq 'Sales' and (RowKey eq '121' or RowKey eq '322')) is served as a
// partition scan, not as two point queries: the guide advises against it.
// PartitionRange and PartitionPrefix select a range of partitions.
//
// The service returns results in PartitionKey, then RowKey order (the Cosmos DB Table API
// does not), a page holds at most 1,000 entities, and a query may return fewer, even none,
// with a continuation token; paging is repo's business.
//
// # The injection boundary
//
// Filters are text, and values usually come from users. This package never concatenates a
// caller's text into a filter:
//
//   - Values are only rendered as literals of their Go type (see Eq). A string becomes
//     '...' with every ' doubled, which is the only escape OData string literals have:
//     inside quotes nothing else is special, so the value stays one literal token whatever it
//     contains (x' or PartitionKey ne ', ')), unicode quotes, newlines). Typed literals carry
//     only digits, hex digits or formatted times.
//   - Property names must be identifiers: a letter or '_', then letters, decimal digits or
//     '_', at most 255 UTF-16 code units, and not an OData keyword (and, or, not, eq, ..,
//     true, false, null, INF, NaN, in any case). So a name is always exactly one token, and
//     never one the parser reads as an operator or literal.
//   - Invalid input does not panic and does not fall back to anything: the Expr carries an
//     *errs.InvalidInputError, which unwraps to the SDK's invalid-input sentinel
//     (errs.ErrInvalidInput of package errs, also repo.ErrInvalidInput); And, Or and Not propagate it, and String
//     returns a fixed text the service rejects. Check Err before sending.
//
// There is no escape hatch for raw filter text on purpose.
//
// # Conditions as data
//
// A job message or a request that chooses which entities to read carries Conditions:
// property, operator, EDM type and value, each a string. Condition.Compile builds the
// comparison with the constructors above, so whoever wrote the Condition chooses one
// value, never the structure of the filter (TestConditionCannotChangeTheFilterStructure).
// Compiled.Matches re-checks the comparison on each entity read back, since a store may
// match a literal of another EDM type than the stored one (Azurite does: N ne true
// selects every Int32 N); only a property of the condition's type matches
// (TestConditionMatchesOnlyItsOwnType). A condition on Timestamp compares the service's
// time of last write, as Edm.DateTime only (TestConditionTimestampComparesTheServiceTimestamp);
// an Edm.Int64 condition is re-checked but never sent (TestConditionInt64IsOnlyRechecked).
//
// # Encoding on the wire
//
// String returns the filter as OData text, not URL-encoded. aztables v1.4.1 sets it with
// url.Values.Set("$filter", ...) and encodes the query with url.Values.Encode, which
// percent-encodes '+', '%', '&', '#', '?', '=', control characters and every non-ASCII byte
// (UTF-8), and writes spaces as '+'. Encoding it again would double-encode it. Strings must
// be valid UTF-8: raw invalid bytes would be decoded by the service into another string.
// Control characters are legal in property values and are sent percent-encoded; they can
// never appear in a PartitionKey or RowKey, so such key comparisons match nothing.
//
// # Limits and types
//
// The service accepts at most MaxComparisons (15) discrete comparisons per filter; And and
// Or refuse more, since Azurite would accept them and hide the failure until production.
// A literal must have the stored property's EDM type to match: an Int64 property is
// compared with int64 (42L), a Double with float64 (42.0), a DateTime with time.Time. The
// service compares the key properties as strings, so pad numeric keys to a fixed width.
// Expr.Terms lists every comparison with its literal's EDM type, and a typed table
// (repo.Table[T]) checks them against T's schema before sending a query: a property T does
// not have, or a literal of another type than T stores, is refused with an error naming the
// property. Dynamic entities (codec.Entity) are not checked.
//
// # Ordering and prefixes
//
// RowKeyPrefix and PartitionPrefix compute the end of a prefix range in code point order,
// which is Go's string order and UTF-8 byte order. It is also UTF-16 code unit order except
// between U+E000-U+FFFF and the supplementary planes. Because of that, a prefix whose last
// character is U+D7FF (unassigned), U+FFFF or U+10FFFF (noncharacters) can give a different
// range on a server that compares UTF-16 code units; for every other prefix the two orders
// give the same range.
package filter

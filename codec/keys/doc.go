// Package keys builds and parses PartitionKey and RowKey values: the string tricks the table
// design guide relies on, as pure functions with no I/O.
//
// Azure Table storage keeps one index, sorted on (PartitionKey, RowKey) as strings. Every
// query that is not a point query is a range scan on that order, so the shape of a key
// decides what can be queried efficiently. The helpers here give the guide's key patterns a
// single, tested implementation:
//
//   - Compound keys (the Azure Table storage design guide, "compound key pattern"; Tablestore's primary key design guide, concatenated partition
//     keys): several values in one key, e.g. the guide's "empid_000123_2012". Join and Split
//     (the Escaped encoding) accept any parts, escape what a key may not contain and keep the
//     order of the parts: for parts lists a < b, Join(a...) < Join(b...). Tablestore's primary key design guide notes that
//     a separator only keeps the order when it sorts below every character of the parts; the
//     escaping guarantees that for every input. New builds the guide's readable style
//     ("_"-separated) for parts known not to contain the separator, and refuses those that do.
//   - Zero padding (Tablestore's primary key design guide, the Azure Table storage design guide): Pad makes numbers sort as strings ("000123");
//     PadDesc makes them sort in descending order.
//   - Inverted ticks (the Azure Table storage design guide, "log tail pattern"): InvertedTicks is the guide's
//     string.Format("{0:D19}", DateTime.MaxValue.Ticks - DateTime.UtcNow.Ticks), compatible
//     with .NET, so that the newest entity comes first and "$top=n" returns the latest n.
//   - Hash prefixes (Tablestore's primary key design guide, "hash prefix"): HashPrefix prepends the first hex digits of
//     the key's MD5 so that sequential keys (order numbers, timestamps) spread over
//     partitions instead of all hitting the last one (the append-only anti-pattern of
//     "Designing a scalable partitioning strategy" and the Azure Table storage design guide). Bucket and BucketKey spread over a fixed number of buckets,
//     so that a reader can query every bucket in parallel.
//   - Prefix ranges: PrefixRange gives the [lo, hi) bounds of every key starting with a
//     prefix, for "RowKey ge lo and RowKey lt hi" filters.
//
// # Order
//
// Ordering claims in this package are about Go string order (bytes of UTF-8, which is the
// order of code points). The service compares keys as strings too; for characters of the
// Basic Multilingual Plane the two orders agree. Characters outside it (emoji, U+10000 and
// above) may sort differently on a service that compares UTF-16 code units, against
// characters U+E000 to U+FFFF only. Compare gives the service's order (UTF-16 code
// units): use it to compare keys read back from the service.
//
// # Errors
//
// Every function that can refuse its input returns an *errs.InvalidInputError (reachable
// with errors.Is(err, codec.ErrInvalidInput)) naming the argument and the rule. Nothing here
// panics on user input; MustNew panics on an invalid separator, which is a constant in
// the program.
//
// Size limits (1 KiB per key) are checked by the codec when an entity is written, not here:
// escaping can make a key up to three times longer than its parts.
package keys

// Package keyspread keeps writes off hot partitions: the prepend/append anti-pattern of the
// Azure Table storage design guide ("Prepend/append anti-pattern"), range partitions and
// partition stress testing ("Designing a scalable partitioning strategy"), and Tablestore's
// hash prefixes and concatenated partition keys (Tablestore's primary key design).
//
// # The problem
//
// The service serves a partition from one server, with a scalability target (500
// entities/s in the guide, 2,000/s today; an account 20,000/s). It may group consecutive PartitionKeys into
// range partitions: then keys that only grow (a timestamp, an order number: append-only)
// or only shrink (prepend-only) send every insert to the last (first) range partition,
// one server, whatever the number of partitions. A PartitionKey that is the current hour
// (the guide's employee access log) makes one partition take every write of the hour.
//
// # The solutions
//
// Buckets spreads keys over N partitions with a stable hash. Key(natural) prefixes a
// sequential key with its own bucket ("07_200001"): the insert point is spread over N key
// ranges, and a range of natural keys is still N range queries, run in parallel and
// merged in order by ReadRange. KeyBy(natural, by) spreads one hot natural partition over
// N partitions by another value (the RowKey, an entity id): ReadPartition reads it back
// with N parallel queries merged in RowKey order, as if it were one partition
// (TestBuckets, TestReadPartitionMergesBuckets, TestReadRangeOfSequentialKeys,
// TestReadPartitionError).
//
// HashPrefix is Tablestore's hash prefix (the first hex digits of the key's MD5,
// "ee8f_200001"): the widest spread, for keys read by point queries only, since a range of
// natural keys can no longer be read by range (TestHashPrefix).
//
// Concat is Tablestore's concatenated partition key: several columns in one key, integers
// zero-padded and parts joined by a separator below every character of the parts, so that
// keys sort as the tuples of their values and PartitionRange still selects ranges
// (TestConcatKeepsOrder).
//
// The guide's own fix for the access log keeps department and employee in the
// PartitionKey and the time in the RowKey (a compound key): see the example.
//
// # Knowing whether you need it
//
// Advise reads a sample of keys (or a write log with times) and reports append-only or
// prepend-only keys, the skew (the hottest partition's share), the peak rate of one
// partition against the target, and a suggested fix with a number of buckets
// (TestAdviseShapes, TestAdviseRates, TestAdviseHotPartitionAtEitherEndIsNotMonotonic);
// it refuses options that are not numbers and returns on any sample
// (TestAdviseRefusesNaNShares, TestAdviseExtremesNeitherLoopNorPanic,
// TestAdviseTinyTargetReturns).
//
// Stress is the guide's partition stress test: with a test table loaded, it drives the
// application's operations at one partition with many workers for a bounded time and
// count, and reports the entities per second the partition took against the target, and
// the error rate (TestStressReportsRateAndErrorsWithinItsBounds). The tool under cmd/partitionstress runs it against a loopback Azurite
// (the emulator does not throttle: it measures the load the application can generate, the
// figure to compare with the target), or, with -model-rate, against a throughput model of
// the service in front of Azurite, whose partition limit it finds within 10 %.
//
// # What spreading buys, measured
//
// Azurite never throttles, so the tests put a throughput model in front of it (a token
// bucket per PartitionKey and one per account, answering 503 ServerBusy beyond them, at the
// published 2,000 and 20,000 entities/s scaled down a hundred times to 20 and 200).
// Writing the same 20,000 access-log entries with the same 32 writers, the hour's single
// partition (append-only) sustained 20 entities/s, one partition's limit, while
// Buckets(16).KeyBy(hour, RowKey) sustained 215 entities/s, the account's: a ratio of
// 10.8. Sequential order numbers against HashPrefix(4), under a model of range
// partitions, gave 20 against 200 entities/s: 10.0 (BENCHMARKS.md, "Throttling: spread vs
// append-only"). On the service the ratio is bounded the same way, by the account target
// over the partition target (10), once the spread outnumbers it; the targets are
// published, the model's token-bucket shape is an assumption
// (TestLoadSpreadVersusAppendOnly, TestLoadHashPrefixVersusSequentialIDs).
//
// # Consistency and cost
//
// Spreading changes keys, not consistency: each entity is still written with one request,
// and entity group transactions still need one partition — so entities that must change
// together must share a bucket (KeyBy with the same by). Reading a natural partition or a
// range costs N queries instead of one (at least N requests, run in parallel with bounded
// concurrency, merged as a stream); point reads cost one request, as before, since the
// bucket is recomputed from the key.
//
// # Errors
//
// Invalid arguments (bucket counts, digits, fields, options) are refused with
// errs.ErrInvalidInput before any request; query errors are those of repo.
//
// # Reading the code
//
// The algorithm: spread.go
//
// It reads as the guide's fix: a sequential key spread over N buckets (or behind a hash
// prefix), and a natural partition or range read back with one query per bucket. The
// streaming merge of the bucket queries is in merge.go, its options in options.go;
// concatenated keys are in concat.go, the advisor in advisor.go and the partition stress
// test in stress.go.
package keyspread

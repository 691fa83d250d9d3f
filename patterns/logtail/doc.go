// Package logtail implements the log tail pattern of the table design guide (the Azure Table storage design guide
// and "Table design patterns", "log tail pattern"): retrieve the n entities most recently added to a
// partition with one request.
//
// # The problem
//
// Applications often need the latest entries of something: the 10 expense claims an
// employee submitted most recently, the last readings of a device. A table query returns
// entities in (PartitionKey, RowKey) order and supports $top, which returns the first n of
// a set; nothing returns the last n. With RowKeys that grow with time, the newest entries
// are at the end of the partition and a reader must scan all of it.
//
// # The solution
//
// Store the entries with a RowKey that sorts in reverse date/time order, so that the newest
// entry is always the first of the partition. The guide's key is the inverted .NET ticks,
// zero-padded so that strings sort like numbers:
//
//	string invertedTicks = string.Format("{0:D19}", DateTime.MaxValue.Ticks - DateTime.UtcNow.Ticks);
//	DateTime dt = new DateTime(DateTime.MaxValue.Ticks - Int64.Parse(invertedTicks));
//
// and the query is $top on the partition:
//
//	https://myaccount.table.core.windows.net/EmployeeExpense(PartitionKey='empid')?$top=10
//
// A Log builds exactly that key (package keys: keys.InvertedTicks is byte-for-byte the
// .NET string; TestRowKeyIsDotNetInvertedTicks), followed by "_" and an id, so that two entries of the same 100 ns tick do
// not collide: Append uses the Log's WriterID and ticks that strictly increase within a
// Log; AppendAt uses the caller's id (the claim id) (TestSameTickDoesNotCollide,
// TestSharedWriterIDMovesToNextTick). Keys convert back to times with
// ParseRowKey and TimeOf. The log reads only the keys that start with its Prefix and a
// digit, so a partition can also hold other entities (the employee row itself).
//
//	claims, _ := repo.New[Claim](clients.Tables, "EmployeeExpense", nil)
//	log, _ := logtail.New(claims, nil)
//	_, err := log.Append(ctx, &Claim{Employee: "000123", Amount: 42.5})   // RowKey set by the log
//	newest, err := log.Newest(ctx, "000123", 10)                           // one request, $top=10
//
// Newest is one request with $top whatever the length of the log
// (TestNewestIsOneRequestWithTop). Range (and Query, for resumable paging with the table's
// Pages) reads the entries between two times, newest first, as one range query
// (TestRangeBounds).
//
// # Consistency
//
// Each entry is one entity written by one request, so it is atomic by itself. Append
// inserts, never twice: a retried insert whose first attempt may have been stored returns
// errs.ErrOutcomeUnknown, or, on a table with repo.Options.TrackWrites, recognises its own
// entry by its write id and succeeds (TestAppendUnderFaultsStoredOnce); it never takes
// another Log's entry for its own (TestAppendNeverTakesAnotherLogsEntryForItsOwn). AppendAt is idempotent (insert-or-replace under the key
// of its time and id), so an import or a message handler can run it again safely
// (TestAppendAtIsIdempotent). Readers
// see entries as soon as they are written; there is no secondary state to keep in sync.
//
// # Cost in requests
//
// Append and AppendAt: one request. Newest(n): one request for n up to 1,000, however long
// the partition is, against ceil(size/1000) requests and the whole partition transferred
// when the RowKeys grow with time (see BenchmarkNewest). Range: one request per 1,000
// entries of the range.
//
// # Issues and considerations
//
//   - Every append goes to the top of its partition: the partition is "prepend-only"
//     ("Designing a scalable partitioning strategy", "range partitions"; the Azure Table storage design guide, "prepend/append anti-pattern"). Choose
//     PartitionKeys that spread the writes (one partition per employee, device or
//     stream) rather than one partition for everything.
//   - The Cosmos DB Table API does not return results in key order, so the pattern (and
//     Newest) only works on Azure Table storage (the Azure Table storage design guide, note on the pattern).
//   - The ticks are zero-padded to 19 digits; otherwise strings would not sort like the
//     numbers they hold (the Azure Table storage design guide, "issues and considerations").
//   - Append's keys depend on the clock. Clocks of different machines disagree, so entries
//     of different writers are ordered as their clocks say, not as they happened; within
//     one Log the order of Append calls is kept even if the clock stands still or goes
//     back.
//
// # Errors
//
// The sentinels these docs name (errs.ErrNotFound, errs.ErrPreconditionFailed,
// errs.ErrInvalidInput, ...) are those of package
// github.com/tablepatterns/tablepatterns/errs: test them with errors.Is.
//
// # Reading the code
//
// The algorithm: logtail.go
//
// It reads as the guide's steps: the inverted-ticks RowKey, the insert of an entry under
// it, and the range query with $top that returns the newest first. The Log's options and
// constructor are in log.go, the parsing of keys and the tick arithmetic of the range
// bounds in rowkey.go.
package logtail

// Package dataseries implements the data series pattern of the table design guide
// (the Azure Table storage design guide and its newer edition, "Table design patterns", "data series pattern"): store a complete series of data in a
// single entity, to minimize the number of requests.
//
// # The problem
//
// An application records, every hour, how many IM messages each employee sent, and plots
// each employee's last 24 hours. One entity per employee and hour makes each update easy to
// find, but plotting a day means retrieving 24 entities.
//
// # The solution
//
// Store the series in one entity, one property per point: H00 to H23 for the hours of a
// day. One point is updated with a merge of that single property; the whole series is read
// with one point query.
//
//	table, _ := repo.New[codec.Entity](clients.Tables, "MessageStats",
//		&repo.Options{TrackWrites: true})                               // required: see Add
//	hours, _ := dataseries.New[int64](table, dataseries.Layout{Points: 24, Prefix: "H"}, nil)
//	err := hours.Set(ctx, "000123", "20240501", 13, 42)                 // merge of H13 only
//	n, err := hours.Add(ctx, "000123", "20240501", 13, 1, nil)          // +1 under If-Match
//	day, err := hours.Get(ctx, "000123", "20240501")                    // 24 points, 1 request
//
// Set writes an absolute value (last writer wins), Put all the points at once. Add and
// Update are read-modify-writes: they read the series, change it, and write the changed
// points with a merge conditional on the ETag they read; when another writer got there
// first (412), they read again and retry after a jittered backoff. With an operation id
// (AddOptions.OpID) they become idempotent: the series remembers the ids of the last
// operations it applied, in the same entity and the same write as the change, so a
// redelivered queue message or a retry after a crash is not counted twice. That makes
// Add suitable as the body of a queue handler (package queueworker) that counts events.
// Without an OpID, each call still carries a generated one: a write whose response was
// lost (repo's errs.ErrOutcomeUnknown), even one another writer built on before the retry, is
// recognised on the re-read and never applied twice; when the re-read shows neither the id
// nor the version read (the series changed or was re-created without it), the call answers
// errs.ErrOutcomeUnknown rather than apply the change again
// (TestAddWithoutOpIDUnderFaultsNeverCountsTwice,
// TestAddNeverRecreatesASeriesDeletedByAnotherWriter).
//
// # Consistency
//
// A series is one entity, so every write is atomic. Set and Put are idempotent, and a Set
// of one point leaves the others as they are (TestSetIsAMergeOfOneProperty). Add and
// Update lose no update under any number of concurrent writers (optimistic concurrency on
// the ETag, the design guide's "managing concurrency"; TestConcurrentAddsLoseNoUpdate),
// and apply each call once (each operation once, with an OpID:
// TestAddWithOpIDCountsEachOperationOnce, TestAddCrashAndRerun). A write whose re-read
// fails still answers errs.ErrOutcomeUnknown (TestAddKeepsOutcomeUnknownWhenTheRereadFails).
// A point that was never written reads as 0; points of another numeric type, written by
// another client, are converted (TestNumericTypes).
//
// # Cost in requests
//
//   - Get: one request for the whole series, against one per point (24 point queries) or
//     one range query returning 24 entities (see BenchmarkReadSeries).
//   - Set, Put: one request.
//   - Add, Update: two requests (read, conditional merge); each conflict costs two more.
//
// # Issues and considerations
//
//   - A series must fit in one entity: at most 252 properties (MaxPoints, 250, leaves one
//     for the applied operations and one for the table's write history) and 1 MiB. A longer series is refused by New with an
//     errs.ErrInvalidInput that says so, by design rather than by accident: store it as a wide
//     entity (patterns/wideentity: several entities of one partition, written in one
//     transaction) or in a blob (the Azure Table storage design guide "large entities"; an eventually consistent
//     update as in "eventually consistent transactions"). TestLimitsAndBadInput,
//     TestFullSeriesFitsWithHistory and TestNewRefusesTrackingInSeriesProperties prove it;
//     a table whose write history would hide the operation ids or a point is refused
//     (TestOpIDCountsOnceWhateverTheTableTracksWritesIn,
//     TestPointReadsBackWhateverTheTableTracksWritesIn).
//   - Many clients updating one series conflict often: each conflict costs a read and a
//     write (the guide warns of it). Spread hot counters, or aggregate in a queue worker
//     that writes once per batch.
//   - Merge, not replace: a point written by Set is never erased by a concurrent Set of
//     another point (the Azure Table storage design guide, "merge or replace").
//
// # Errors
//
// The sentinels these docs name (errs.ErrNotFound, errs.ErrPreconditionFailed,
// errs.ErrInvalidInput, ...) are those of package
// github.com/tablepatterns/tablepatterns/errs: test them with errors.Is.
//
// # Reading the code
//
// The algorithm: dataseries.go
//
// It reads as the guide's steps: one point query for the series, a merge of one property
// for a point, and the read-modify-write under If-Match for Add and Update. The write whose
// response was lost is decided in outcome.go; the layout, options and constructor are in
// options.go and store.go, the conversion of points and the checks of input in points.go.
package dataseries

// Package bloblog stores log records in Blob storage rather than in a table: the design
// guide's answer to the log data anti-pattern (the Azure Table storage design guide, "ログ データのアンチパターン";
// "Table design patterns", "Log data anti-pattern").
//
// # The problem
//
// Log data is written in time order and read by time range ("every error between 15:04
// and 15:06"). In a table, a PartitionKey derived from the time sends every write of the
// moment to one partition — the hot partition of the prepend/append anti-pattern — while a
// PartitionKey spread over many partitions makes a time-range read scan them all.
//
// # The solution
//
// Write the records to blobs named by time, as Storage Analytics does:
//
//	<source>/YYYY/MM/DD/hhmm/NNNNNN.log      e.g. queue/2014/07/31/1800/000001.log
//
// where hhmm is the start of the period (an hour by default) holding the records' times
// and NNNNNN numbers the period's blobs. Each blob's metadata records the first and last
// record times (starttime, endtime). A time-range read lists the name prefix of each hour
// the range touches ("queue/2014/07/31/18" for 18:00 to 19:00, which also covers shorter
// periods such as 1815), skips blobs whose metadata range misses it, and downloads the
// rest; lines outside the range are skipped by comparing their fixed-width time text
// (TestWriteReadRange, TestListSkipsByMetadata, TestShortPeriods,
// TestShortReaderPeriodReadsHourWriters).
//
// Writer buffers records in memory and appends them to append blobs — one request per
// flush instead of one per record, the trade-off between reliability, cost and
// scalability the guide asks to weigh — flushing when Options.FlushBytes are buffered,
// every Options.FlushInterval, on Flush and on Close. Write blocks when
// Options.MaxBuffered bytes wait, so memory stays bounded when the store is slow. A blob
// is closed for appends at Options.MaxBlobBytes and the period's next one (NNNNNN+1)
// begins (TestFlushOnSizeAndInterval, TestBackpressure, TestRollover).
//
//	w, _ := bloblog.NewWriter(clients.Blobs, "logs", "web", nil)
//	_ = w.Write(ctx, bloblog.Record{Time: time.Now(), Data: []byte("GET /index.html 200")})
//	_ = w.Close(ctx)                         // flushes: no record is lost
//	r, _ := bloblog.NewReader(clients.Blobs, "logs", nil)
//	for rec, err := range r.Read(ctx, "web", from, to) { ... }
//
// Records are lines of text: the time (UTC, 7 fractional digits), a tab, and the data with
// backslash, LF and CR escaped, so any bytes round-trip and a blob can be read with grep
// (TestRecordEncodingRoundTrips).
//
// # Consistency and durability
//
// A record is stored once Flush or Close returned nil for it. Records buffered in memory
// are lost if the process dies; nothing is lost on a graceful Close, which flushes and, if
// that fails, keeps the records and returns the error (call Close again). A failed flush
// keeps its records in front of the buffer, in order (TestConcurrentWritersAndClose).
//
// No record is stored twice. Each append is conditional on the blob's length as the writer
// knows it (x-ms-blob-condition-appendpos): a retry after a lost response is refused, and
// the blob's length then tells whether the first try was stored. An append whose outcome
// stays unknown (retries exhausted) is checked the same way before the next flush sends
// anything. A writer creates its blobs with If-None-Match: * and appends only to its own,
// so several writers (even of one source) never interleave
// (TestFaultsStoreEachRecordExactlyOnce).
//
// The metadata range is widened before each append that needs it, never after: a crash
// between the two leaves a range wider than the records, never narrower, so a reader that
// skips blobs by metadata never misses one.
//
// # Cost in requests
//
// Writing: per flush, one append per period touched (per 4 MiB), plus one metadata update
// when the period's time range grows, plus a list and a create when a period's first blob
// is started. Reading a range: one list per hour touched (per period for periods over an
// hour), one download per blob that may hold records of the range.
//
// # Errors
//
// Bad input (a zero or out-of-range time, a record over MaxAppendBytes, a bad source or
// container name, invalid options) is refused with errs.ErrInvalidInput before any request
// (TestInvalidInput).
// Service errors wrap the SDK's sentinels (errs.ErrNotFound for a missing container,
// errs.ErrTransient when retries are exhausted).
//
// # Reading the code
//
// The algorithm: append.go
//
// It reads as the guide's steps for writing: the records of each period, in time order,
// go to the period's current blob (found by listing its directory, created with its
// metadata range), whose range is widened before each conditional append. An append or a
// create whose response was lost is decided in outcome.go; buffering, the interval flush
// and Close in writer.go; options in options.go, the blob metadata in metadata.go, the
// line format and the names in record.go; the time-range read in reader.go.
package bloblog

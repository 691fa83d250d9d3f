// Package rangejob is the selection of a resumable range job over a table: which
// entities the job reads, and how far it has come. Package consistency's archive-range
// job moves what a selection holds; a backfill, a verify or a clean-up of a live
// migration reads what one holds just so.
//
// # What a selection is
//
// A Selection is data that a job message carries: one partition (with an optional
// RowKey range), a range of partitions, and/or Where conditions (filter.Condition), plus
// After, the checkpoint. Its JSON names (pk, rkFrom, rkTo, pkFrom, pkTo, where, after)
// are the wire format of the jobs that carry one. A job read from a queue is untrusted:
// Validate checks the key bounds (the service's key rules, non-empty ranges), the
// conditions and the checkpoint before any request, with ErrInvalidInput naming the
// field (TestSelectionRefusesBadInput).
//
// # The filter-structure promise
//
// The filter is built from the selection with package repo/filter, never from its text:
// a message chooses keys and values, never the structure of the query
// (TestSelectionFilterStructureIsFixed). Every entity a scan returns is re-checked
// against the conditions (Plan.Matches), so what the store matched beyond them (a literal
// of another EDM type) is never acted on; Edm.Int64 conditions are re-checked only, never
// sent (filter.Compiled.Sent). A job's conditions are compiled once per run, not per
// entity (TestPlanParsesConditionsOnce).
//
// # The checkpoint promise
//
// Plan.Scan(after) selects the entities of the selection strictly after the checkpoint in
// the service's key order (PartitionKey, then RowKey, by UTF-16 code units), so a job that
// records the last key it scanned as After resumes where it stopped and never reads an
// entity twice in one pass nor skips one (TestScanResumesStrictlyAfterTheCheckpoint). A
// checkpoint is a position, not an address: CheckPosition accepts any text the filter
// can carry inside the selection's range (a key the job cannot address, such as an empty
// PartitionKey, included, so that a job moves past it) and refuses one outside the range:
// a scan that returned it broke its filter (TestPositionInsideRangeOnly). Addressable
// decides which keys a job may act on.
//
// ID gives a job's deliveries one message id per job and checkpoint, so duplicates carry
// the same id.
package rangejob

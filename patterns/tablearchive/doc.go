// Package tablearchive implements Tablestore's hot/cold separation ("separate cold and
// hot data") for Azure Table storage: old data moved out of the hot tables whole. An
// application that writes one table per period (package periodtable) exports each
// period's table, once it can no longer be written, to immutable generations of blobs in
// a container, verifies them against the table, and drops the table; a restore writes a
// generation back. Single entities and ranges are moved by package consistency; one
// worker runs the jobs of both (the archiver binary registers both).
//
// The algorithm: export.go
//
// # Whole tables: sealed only, immutable generations
//
// ArchiveTable exports a whole table, then deletes it. It only takes a sealed table, one
// that can no longer be written: a periodtable period that ended more than
// Options.SealGrace + Options.ClockSkew ago (its writers, through periodtable with
// SealAfter set, refuse to write it or re-create it), or a table the job declares Sealed
// (the operator guarantees that no writer is left). Anything else is ErrNotSealed before
// any request. The period a job claims is checked against the data too: Daily and Weekly
// stamps look alike, so an entity whose Timestamp is after the claimed end + SealGrace +
// ClockSkew proves that writers still write the table (ErrNotSealed, nothing deleted;
// a table filled later on purpose, a backfill, is archived with Sealed). Change is
// detected exactly, not by counts: the export hashes the (PartitionKey, RowKey, ETag) of
// every entity; before the manifest the table is scanned again and must hash the same
// (any insert, update or delete changes it); immediately before DeleteTable the
// entities with a Timestamp at or after the export's start minus ClockSkew are queried,
// and each must be one the export holds (at most MaxRecentWrites such entities, 32 bytes
// each; more is ErrNotSealed: the table is not quiet). A changed table is
// ErrTableChanged: nothing is deleted, the job is not retried. The remaining window is
// from the start of that last query, through one listing of the generations, to the
// delete (milliseconds on a quiet table), and writes whose Timestamp is more than
// ClockSkew behind the archiver's clock.
//
// Each export is an immutable generation: its data blob and manifest have a unique name
// (<table in lower case>/<generation>/...) and are created with If-None-Match, so a
// table re-created after its archive (a late write) is archived beside the earlier
// generation, never over it. Generations are ordered by Manifest.CheckedAt, the start of
// the last rescan that proved the table held exactly that export, raised above the
// CheckedAt of every generation the exporter listed just before that rescan (whose
// checks came first); the table is deleted only after the latest generation (if another
// became the latest meanwhile, the job checks the table against that one, or exports
// again). Clock skew between workers: a generation always orders after every generation
// that existed when its check began, so a re-created table's export orders after the
// earlier table's whatever the clocks, and exports on one clock order as their checks
// began. The remaining case: two exports of one table running at once, neither seeing
// the other's manifest, on clocks that differ by more than the time between their
// checks, with a write between those checks: the older export can sort as latest. The
// job holding it fails its own check (the write is newer than its export) and deletes
// nothing, and if its manifest appears before the other job's last listing that one
// does not delete either; if it appears after, the table is deleted and "latest" gives
// the older version of the written entity (all generations still hold the write).
// Sealed tables have no writers, so this takes a writer, a duplicate job and skew at
// once. RestoreTable restores the
// latest generation, a chosen one, or all of them merged in that order; it snapshots and
// verifies every chosen export whole against its manifest before it writes anything
// (ErrArchiveCorrupt is permanent), and writes from the snapshots it verified; its
// snapshots carry a per-restore id in their metadata, and every snapshot with that id
// is deleted at the end (one taken by a retry after a lost response too). An export
// that fails before its manifest
// deletes its data blob; SweepAbortedExports removes what a killed process leaves.
//
// The data a manifest refers to is never deleted by the sweep, and no table is deleted
// after a generation whose data is gone: SweepAbortedExports counts only a 404 on the
// manifest as "no manifest", deletes If-Match the ETag its listing saw, and ages blobs by
// the service's clock; the exporter sets its data blob's metadata (a new ETag) If-Match
// the ETag it verified just before it creates the manifest and again just before
// DeleteTable, and deletes the table only when that succeeded. A sweep that listed the
// blob earlier then meets 412; one whose delete came first makes the export stop
// before its manifest, or keep the table (the rerun exports a new generation).
//
// Manifests, recorded versions, generation names and messages are read back as untrusted
// input: a manifest must name the data blob this package gives its generation, and the
// jobs are checked against the archiver's allowlists (Options.AllowedTablePrefixes,
// Options.AllowedContainers): whoever can write to the jobs queue can otherwise make the
// worker move or delete any table its key reaches.
//
// What write access to the archive container allows (without access to the table): it
// can delete or replace archives, and add generations, which a restore of all
// generations (or of the latest, when it orders last) then writes. It cannot make
// ArchiveTable delete a table on the strength of a generation it forged: before a rerun
// deletes a table after an existing generation, the table itself is scanned with every
// property and must hash to that manifest's Versions and to its SHA256, size and count
// (so the data blob, checked against the manifest, holds exactly the table's content);
// a generation ordered after the archiver's clock + ClockSkew is ignored by every
// listing (logged), so a far-future forged CheckedAt neither becomes the latest nor
// pushes a real one out of range. A manifest that is not one this package writes still
// makes the listing fail (ErrArchiveCorrupt) until it is removed.
//
// # Sharded exports
//
// A large table is exported by several worker processes at once when its
// ArchiveTableJob sets Shards (2 to MaxShards), as the guide's "Designing a scalable
// partitioning strategy" suggests: the unit of parallel work is a range of partitions.
// It takes three job kinds on one queue (Options.Queue, the queue the workers read; any
// number of worker processes):
//
//  1. archive-table plans: a keys-only scan ($select=PartitionKey) counts the entities
//     of each partition, and Shards-1 bounds cut the key space into PartitionKey ranges
//     of about equal counts (a partition is never split: fewer partitions, fewer
//     shards). The plan (ShardPlan, <table>/<generation>/plan.json) is created with
//     If-None-Match; the generation's name derives from the queue message, so every
//     delivery of one message plans the same generation and keeps the first plan. It
//     enqueues one archive-table-shard job per shard.
//  2. archive-table-shard exports its range (PartitionKey ge low and lt high) to a data
//     blob of its own (shard-NNNN-xxxxxxxx.jsonl.gz, a new name per attempt), reads it
//     back, touches it If-Match, creates its ShardManifest (shard-NNNN.json) with
//     If-None-Match, and then enqueues the combine. A delivery that finds its shard
//     manifest and its data only enqueues the combine again (a kill between the two
//     loses nothing); of two deliveries at once, one manifest stands and the other's
//     data is removed.
//  3. archive-table-combine waits for every shard (a missing shard manifest is
//     OutcomePending: nothing written, nothing deleted; the last shard's job enqueues
//     the combine again). It then scans the whole table with every property, in key
//     order, and requires each shard's range to hash to its shard manifest: the
//     versions (else ErrTableChanged: the table was written since that shard read it)
//     and the content (else ErrArchiveCorrupt: the shard manifest, read from the
//     container, is forged). Before that scan it reads every shard's data back against
//     its manifest and touches each blob (data gone fails before the scan, and the new
//     Last-Modified keeps a sweep off the generation while the scan runs); after it, it
//     touches each blob again (If-Match), writes the generation's manifest
//     (Manifest.Shards, Manifest.ShardsSHA256 binding the shard manifests; the
//     table-wide counts and checksums are those an unsharded export of the same table
//     has), and deletes the table as ArchiveTable does (the Timestamp check, the latest
//     generation, the data touched again). Two combines at once write one manifest (the
//     second takes the one it finds when it describes the same content) and delete the
//     table once; if another generation became the latest, the combine finishes as a
//     rerun of the unsharded job would.
//
// Nothing a shard or combine job reads back is trusted: plans (bounds strictly
// increasing and valid keys), shard manifests (their range, their data blob's name in
// the generation's folder, their checksums) and the counts are validated, and a forged
// or missing shard never gets the table deleted: the table's own content must hash to
// every shard. Shard manifests are bound to the generation's manifest only by
// ShardsSHA256 and sums, which anyone with write access to the container can recompute
// over forged shards; so every later reader of a sharded generation (a rerun of the
// unsharded job, a combine that falls back to it, a restore) also reads the shards'
// data in shard order through one SHA-256 and requires it to equal the manifest's own
// SHA256, the table-wide checksum a rerun compares with the table itself: the data, not
// only the manifests, is tied to the table, as an unsharded generation's data is by its
// SHA256 (else ErrArchiveCorrupt: the rerun exports the table again, a restore writes
// nothing). RestoreTable restores a sharded generation in one job: it reads the shard
// manifests (contiguous ranges, bound by ShardsSHA256, adding up to the manifest's
// counts), snapshots every shard and verifies the snapshots, one after another through
// that one hash, before it writes anything, then writes them in key order, shard after
// shard, in the windows of 20,000 entities an unsharded restore writes, filled across
// the shards' boundaries: one retry.Schedule paces every partition of a window,
// whichever shard holds it, so the restore never has more transactions in flight than
// one BulkWrite, and a hot partition is written beside the cold ones of every shard
// (TestRestoreOfShardedGenerationPacesEveryShardOnOneSchedule; unsharded:
// TestRestoreSpreadsWritesOverPartitions). One job rather than one per shard, because
// "nothing is written unless every byte verified" needs every shard verified before the
// first write, and restores are bounded by the table's write rate rather than by one
// reader. Generations, ReadManifest, restore
// -generation all and a rerun of an unsharded job read sharded generations like the
// others; SweepAbortedExports also removes the shard data of a generation without a
// manifest, and shard data that no shard manifest names (an attempt killed before its
// manifest), once no blob of that generation (plan, shard data, shard manifest) was
// written within olderThan: a generation in progress is kept whole while its last
// shards run. Its olderThan must then exceed the longest pause of a sharded export (one
// shard's export, or the combine's read of the shards' data, or its scan). A generation
// swept anyway can never complete: its shard jobs (a shard manifest without its data)
// and its combine are ErrArchiveCorrupt, permanent, nothing deleted; a new
// archive-table job archives the table.
//
// The bounds are compared as Go strings (UTF-8 byte order) and must come back from the
// service in that order: a table whose partition keys mix characters beyond U+FFFF with
// U+E000 to U+FFFF, where UTF-8 and UTF-16 orders differ, may fail its plan or its
// combine (nothing deleted); archive such a table unsharded.
//
// Consistency: the same as an unsharded export (the combine's check is the rerun path's
// full-content check, per shard), with shards read at different times: a write between
// a shard's read and the combine's scan is ErrTableChanged, one after is found by the
// Timestamp check. Cost: the plan's keys-only scan (one count per partition kept in
// memory), each entity read once by its shard and once by the combine's scan, every
// shard's data uploaded, read back twice (shard, combine) and touched four times, one
// message per shard, one combine message per shard (all but the last find work
// pending, for a few reads each), and the plan and shard manifests (small blobs). A
// rerun and a restore read a sharded generation's shards one after another (one
// SHA-256 over them all).
//
// Load on the table's partitions: every scan reads one page at a time. A shard reads
// its PartitionKey range sequentially and the shards' ranges are disjoint, so however
// many workers run the shards, one sharded export never has two scanning reads in
// flight in one partition; the plan's keys-only scan and the combine's whole-table scan
// and Timestamp query are sequential too, over every partition, one page at a time (a
// combine's scan is as long as an unsharded export's). Each job's check that the table
// exists adds a read of one entity, of the table's first partition. A shard whose reads
// are answered 503 ServerBusy ("The server is busy.") retries them while the shards in
// other worker processes keep reading
// (TestShardedExportReadsEachPartitionOneRequestAtATime); within one process a read
// carries no single partition (a range spans several), so its refusal slows that
// client's Gate, as an answer of unknown scope does. Two deliveries of one shard at
// once (duplicates) each read its range.
//
// # Consistency and cost
//
// A table export reads the table once to export it and twice more (a keys-only scan,
// and a Timestamp query), writes two blobs, reads the data blob back to verify it, sets
// its metadata twice, lists the table's generations three times (one listing of the
// table's folder and one read per manifest each), and deletes the table with one
// request. A rerun that
// finds the table already exported reads the whole table (every property) and the whole
// data blob instead of exporting again. A restore adds one snapshot per generation, one
// listing of its snapshots and their deletion.
//
// # Data fidelity
//
// Table exports store each entity as codec writes it, with the EDM type of every
// property, and read the table with full metadata. Against Azurite a whole-valued
// Edm.Double (3.0) cannot be told from an Edm.Int32 (Azurite annotates no doubles, and
// aztables rewrites 3.0 as 3), so it is restored as Edm.Int32; the real service annotates
// doubles under full metadata and keeps them.
//
// # Errors
//
// The sentinels these docs name (errs.ErrNotFound, errs.ErrPreconditionFailed,
// errs.ErrInvalidInput, ...) are those of package
// github.com/tablepatterns/tablepatterns/errs: test them with errors.Is.
package tablearchive

// Package consistency implements the Azure Table storage design guide's "Eventually
// consistent transactions pattern" for the archive jobs every Table storage application
// ends up needing: an entity, or a range of entities, moved from one table to another
// table or to a blob container. Whole tables (Tablestore's hot/cold separation: a
// per-period table exported and dropped) are package tablearchive; one worker runs the
// jobs of both (the archiver binary registers both).
//
// The algorithm: move.go
//
// # The problem
//
// An entity group transaction covers one partition of one table. Moving an employee from a
// Current table to an Archive table, or into a blob, touches two stores: there is no
// transaction that spans them, and a process can stop between any two of its requests.
//
// # The solution
//
// The client does not move anything itself: it enqueues a message that says what to move
// (EnqueueArchiveEntity). A worker (package queueworker, or the archiver binary under
// queueworker/cmd/archiver) then runs the move as steps that are each idempotent:
//
//  1. read the archive copy (its ETag, and the source ETag it records), then the source
//     entity (its ETag);
//  2. unless the copy already records that source ETag, write it conditionally: insert
//     when there was none, replace If-Match the copy's ETag otherwise;
//  3. delete the source If-Match the ETag read in step 1;
//  4. delete the message (the worker does, once the handler returned).
//
// A message is delivered at least once, so each step must give the same final state when
// it runs twice, runs concurrently with itself, or runs again after a stop anywhere:
//
//   - the target is read before the source, so a source that holds another version than
//     the one the copy records holds a newer one (a version, once replaced or deleted,
//     never comes back): a copy never replaces a newer copy;
//   - any conflict (the copy or the source changed between two steps, or a write whose
//     outcome is unknown: repo.ErrOutcomeUnknown) restarts the move from fresh reads;
//   - a 404 on the source delete counts as moved only when one Get finds the source
//     really gone and the copy records the version read in step 1; otherwise the move
//     restarts and finds what happened (a store can answer 404 for an entity that is
//     there: TestArchiveEntity404WhileThereStartsOver, TestEntity404NotGone);
//     a second such 404 for the same version, the entity still there unchanged, is a
//     store that cannot address it (Azurite's $batch, for a key with U+2028): the move
//     fails once with ErrInvalidInput, permanent, rather than restarting until its
//     retries end (TestArchiveEntityRefusedDeleteFailsOnceAsPermanent; a companion's
//     copy refused so too: TestArchiveEntityCompanionDeleteRefusedTwiceFailsOnceAsPermanent);
//   - stopped after 3: the rerun finds no source and a copy: OutcomeAlreadyArchived.
//
// Concurrent duplicates, replays and reorders of a message therefore end with the newest
// version archived once and the source gone (TestArchiveEntityDuplicatesRaceAnUpdate,
// TestArchiveEntityStaleDuplicateNeverReplacesNewer). Neither source nor target holding
// the entity is OutcomeMissing: the worker handler moves such a message to the poison
// queue (queueworker.Cancel) for an operator to look at, rather than retrying it.
//
// # Range archives: many entities per request
//
// One message per entity makes the queue the limit (about six requests per entity). An
// archive-range job (ArchiveRangeJob, EnqueueArchiveRange, Archiver.ArchiveRange) moves
// every entity of one partition (optionally a RowKey range), of a range of partitions,
// and/or of a filter from the source to a target table or container. The filter is
// data, never text: Where holds filter.Condition values (property, operator, EDM type,
// value) that package repo/filter turns into a query, so a message chooses values, never
// the query's structure. The whole job, its conditions and its checkpoint are validated,
// and the allowlists applied, before any request.
//
// A delivery scans up to RangeJobSize keys after the job's checkpoint (After, one page
// of keys and the properties the conditions name), splits them into batches of up to 100
// keys of one partition, and moves the batches (8 at once, spread over the page's
// partitions by retry.Schedule, at most 2 in one partition: a busy partition slows only
// its own batches; TestRangeArchiveSpreadsBatchesOverPartitions), each with the steps of
// a single move:
//
//  1. read the target's copies of the batch (a table: one query of the batch's key
//     range, one page, then a point read for each key past that page, so earlier
//     archives between the batch's keys never make it a scan; a blob: one GetProperties
//     each), THEN the batch's source entities (one query): as for one entity, a source
//     version other than the one a copy records is a newer one;
//  2. write the copies that do not record the source's version: insert where none was,
//     replace If-Match the copy's ETag otherwise, in entity group transactions of up to
//     100 in a target table (one conditional upload per blob); a target table that does
//     not exist is created by the first copy transaction that meets its absence;
//  3. delete the source entities If-Match the ETags that were copied, in entity group
//     transactions, each with its Companions' Actions: up to 100 actions, never two on
//     one row (see "Companions in a range archive" below).
//
// Copy and delete transactions are cut by their action count and by their payload as
// repo.TransactionSize measures it (the measure repo.Submit refuses by: bodies, and
// request lines that carry both path-escaped keys), so no transaction is refused for
// its size (TestRangeReplaceCopiesOverWireBudget,
// TestRangeCompanionUpdatesOver4MiB). One entity whose delete and companion actions
// alone exceed a transaction is refused (ErrInvalidInput; the job is cancelled).
//
// An entity the target cannot take (its table copy would have more than 252 custom
// properties with the copy's own (three), or exceed 1 MiB; its blob name would be too long) is
// left in the source unchanged and the rest of the range moves: RangeReport.Skipped
// lists its keys and a warning logs them, keys only, never its values
// (TestRangeSkipsEntitiesTheTargetCannotTake, TestRangeOnePoisonEntityStopsTheJob).
// So is a key the scan returns that the job cannot address: an empty PartitionKey
// (another client can store one; aztables refuses it on every point operation) or a
// character the service forbids in keys (a store that does not enforce the rule). The
// keys a scan returns are still checked against the range and the order, and a
// checkpoint is a position, not an address: a continuation after such a key resumes
// after it (TestRangeUnaddressableKeysSkippedAndResumedAfter,
// TestRangeEmptyPartitionKey).
//
// Where conditions are re-checked on the entities read, by the scan and by each batch's
// source read: a property must be stored with the condition's EDM type and compare as it
// says (strings by UTF-16 code units; an ordering of GUIDs is left to the service), or
// the entity is left, whatever the query returned: Azurite matches literals of another
// type (N ne true selects every Int32 N), and the job does not rely on any store not
// doing so. An Edm.Int64 literal fails Azurite's whole query with 500 as soon as it
// meets one entity whose property holds an Edm.Int32, an Edm.Double or a boolean (an
// Int32 literal against an Int64 property does not fail; see package tabletest), so
// Edm.Int64 conditions are never sent (rather than refusing such jobs, which cannot know
// the stored types in advance): the job checks them itself on every entity that its key
// range and its other conditions select (RangeReport.Scanned counts the matching ones),
// which costs a scan of those, not of the matches only (TestRangeConditionTypeMismatch,
// TestRangeConditionsOfTheirOwnType, TestRangeInt64ConditionBesideOtherNumberTypes). On Azurite a whole Edm.Double reads back as Int32,
// so an Edm.Double condition does not select it there.
//
// A condition that can match nothing is reported, not only obeyed: each page checks the
// job's conditions on the entities its scan returned (or, when it selected none, on a
// sample of up to 100 entities of the key range, one more query) and warns, in
// RangeReport.Warnings and the log, of a property that never occurs there (misspelled)
// or occurs with another EDM type than the condition's (an Edm.Int32 value against an
// Int64 property). Every delivery the worker runs logs what it selected, moved, skipped
// and left (Info "archive range: page done") and hands its report to Options.RangeDone,
// which the archiver binary adds up per job in its run summary
// (TestRangeWarnsOfConditionsThatCanMatchNothing).
//
// A condition on Timestamp selects by the service's time of the entity's last write:
// "archive what was not written for a year" is Where Timestamp lt (now minus a year),
// Type Edm.DateTime (any other Type is refused, ErrInvalidInput). The query compares the
// service's Timestamp and the re-check compares the Timestamp read back (codec keeps it
// in Entity.Timestamp, not in Properties), so a write to an entity after the scan takes
// it out of the move: its delete is If-Match the version read
// (TestRangeTimestampConditionThroughWorker).
//
// Any conflict (a 409 or 412, a 404 in the delete transaction, ErrOutcomeUnknown) fails
// the batch's attempt, and the next attempt reads again: a transaction that committed
// took its entities out of the source, so an attempt moves only what is left. An entity
// is therefore deleted only at the version its copy holds, a copy never replaces a newer
// one, and duplicates, concurrent deliveries and replays of a job end with each entity
// archived once (TestRangeArchiveKilledTenTimes, TestRangeTwoDeliveriesAtOnce,
// TestRangeWriterBetweenCopyAndDelete, TestRangeResponseLostAfterCommit).
// An entity whose own delete fails because it was written (or deleted) since the batch
// read it leaves its transaction and the rest of the batch is sent again: the next pass
// reads and moves it alone. One written again before every pass's delete (a hot entity)
// is left in the source when the passes (Options.Retry) run out, reported in
// RangeReport.Changed and logged, and the job goes on: its other entities, the page and
// the continuation never wait for it
// (TestRangeMovesTheRestOfABatchWhenOneEntityChangesBeforeEachDelete).
// A refusal (4xx) of an entity's own delete in the transaction costs one Get of that
// entity: gone or changed, the attempt fails as above; still there at the version read,
// the store refused a delete it should have done (Azurite reads the keys of a delete in
// a $batch with a regular expression that stops at U+2028/U+2029, and so addresses
// another row: 404, 412 or 400 InvalidDuplicateRow), and the entity is deleted alone
// (one plain delete If-Match the copied version) while the rest of the transaction is
// sent again, or, when companions need the transaction, left with its copy and reported
// in RangeReport.Skipped (TestArchiveRangeLineSeparatorKeyBesideEmptyRowKey,
// TestArchiveRangeLineSeparatorKeyWithCompanionSkipped,
// TestRangeLineSeparatorKeys). A companion's copy whose delete answers 404
// in two attempts in a row, at the same version of its entity, while the companion
// finds it there each time, is one the store cannot address: that entity is left and
// reported in RangeReport.Skipped, and the rest of the batch moves
// (TestArchiveRangeCompanionDeleteRefusedTwiceSkipsTheEntity).
//
// Checkpoints: with Options.Queue set (the archiver binary sets it), a delivery moves one
// page and then enqueues its continuation, the same job with After at the last key it
// scanned, before it returns; a stop anywhere leaves this message (delivered again, it
// redoes its page, finding moved entities gone) or the continuation. A continuation is
// untrusted like any job: its checkpoint must be a position inside the job's range (valid
// UTF-8 of a key's size; it may be a key the job cannot address, such as an empty
// PartitionKey, which the scan returned last), and
// the keys a scan returns must be inside the range and ascending, so a job never moves
// backwards or outside its selection. Keys compare as the service orders them, by UTF-16
// code units (keys.Compare): a key with a character above U+FFFF sorts before one with a
// character in U+E000–U+FFFF (TestRangeKeysUTF16Order). A stop between the continuation's enqueue and the
// message's delete leaves two messages over the rest of the range: both are safe, and
// the cost is their contention. Without Options.Queue a delivery runs the whole range.
//
// Companions in a range archive (see "Index-aware moves" for what they are): the
// companions are asked about every entity of a batch after its reads and before its
// copies are written, so a refusal (errs.ErrInvalidInput: a row the companion cannot
// archive, such as an index's own copy) leaves the batch unwritten and the job goes to
// the poison queue. Select the entities, not their copies: an Intra's primaries by
// their RowKey prefix (RowKeyFrom "empid_", RowKeyTo "empid`"), a SamePartition's
// entities outside its KeyRange; an Inter's copies live in other partitions. Each
// delete transaction is one delete step of the companion protocol, as for one entity:
// one deadline, the shortest Within of the removals of the entities it deletes, taken
// before their Before hooks (up to 16 at once), bounds the hooks and the transaction;
// a transaction that cannot be sent in time is not sent, one still running at the
// deadline is abandoned, and the batch starts over from fresh reads (its Before hooks
// run again; TestArchiveRangeWithinExpiresBeforeTheDeleteTransaction). Once a
// transaction committed (or when its outcome is unknown), the After hooks of its
// entities run, their errors logged when the Removal has a Before
// (TestArchiveRangeFailingAfterIsLogged) and failing the job when it has none
// (TestRangeFailedAfterWithoutBeforeFailsTheJob; Moved still counts the
// committed deletes). Entities of a batch can share a
// companion row (the index entity of a value many of them hold): an entity's actions
// were computed from the row as it was, so a transaction never takes two groups that
// address one row; the later one waits for the next round of the batch, where its
// companions are asked again against the row as the last round left it. A batch of 60
// entities sharing three values deletes in 20 rounds, with no failed transaction
// (TestArchiveRangeSamePartitionRemovesEntriesInTheDeleteTransactions); two deliveries
// at once make each other's transactions fail If-Match on the shared rows and restart,
// and end with every entity moved once
// (TestArchiveRangeSamePartitionTwoDeliveriesAtOnce). Range archives
// over Intra, Inter and SamePartition indexes leave no copy a lookup finds
// (TestArchiveRangeIntraRemovesCopiesInTheDeleteTransactions,
// TestArchiveRangeInterRemovesCopiesThroughTheWorker, once the worker settled).
//
// What a range job does not promise: an entity written behind its scan (at a key it has
// passed, or one that starts to match its filter later) is left in the source; run the
// job again. An entity that stops matching the filter before its batch reads it stays;
// one that stops matching between its copy and its delete stays too (the delete fails
// If-Match and the batch's next read leaves it out), and keeps that older copy in the
// target beside it: the source stays authoritative, and a later move replaces the copy.
// RangeReport.Moved counts the deletes whose commit this run saw (one lost in a lost
// response is not counted, although it happened). A range rerun never sees the entities
// an earlier run deleted (its scan finds only what is left), so it calls no Sweeper: a
// stop between a delete transaction and the After hooks of a companion without Before
// (Inter with SafetyDelay off) leaves those copies until Notify or Repair; give such an
// index a SafetyDelay when it is archived by range.
//
// Cost: per 100 entities one target read, one source read, one copy transaction and one
// delete transaction (a blob target: two blob requests per entity instead of the target
// read and the copy transaction); per 1,000 one scan of keys and three queue requests.
// A target partition holding more than a page of other copies between a batch's keys
// adds up to one point read per key; large entities add copy and delete transactions
// (4 MiB each); Edm.Int64 conditions make the scan read every key of the range.
// Companions add their reads and enqueues per entity, one delete transaction per round
// when entities share a companion row, and one more companion read for each entity that
// waited for a later round (asked again when its turn comes).
// That is about 0.065 requests per archived entity against about 6 for one archive-entity
// job per entity (BENCHMARKS.md: 10-14x the entities per second on Azurite).
//
// # Index-aware moves: companions
//
// An entity can have copies that other patterns keep: the index rows of package
// secondaryindex, the index entities of package indexentity. Moved alone, it would leave
// them behind, and lookups would keep finding an entity that is no longer in the table.
// Companion is the one relation between the archive and those patterns: for each source
// table, Options.Companions lists the patterns that keep copies of its entities, and
// before a move writes anything it asks each of them what removing the entity means to
// it (Removal). A new pattern plugs in by implementing Companion; this package does not
// know the index packages (they import it). secondaryindex.Intra, secondaryindex.Inter,
// indexentity.SamePartition and indexentity.Eventual implement it; the copies are
// removed, not re-created in the archive (the archive holds the entity once, and an
// index lists the entities of its own table).
//
// A Removal has two parts, one per kind of copy:
//
//   - copies in the entity's own partition (Intra's copies, SamePartition's index
//     entity): Actions, each conditional on the ETag the companion read, committed in
//     one entity group transaction with the conditional delete of the entity. Step 3
//     becomes that transaction: the entity and its copies go together or not at all. A
//     copy that changed or went since it was read (412, 404; 409) fails the whole
//     transaction, and the move starts over from fresh reads, never half applied
//     (TestArchiveEntityCompanionCopyChangesBeforeTheTransaction,
//     TestArchiveIntraWriterBetweenRemovalAndTransaction,
//     TestArchiveSamePartitionWriterBetweenRemovalAndTransaction);
//   - copies elsewhere (Inter's index partitions, Eventual's lists): Before, the durable
//     first step of the pattern's own eventually consistent protocol, run before the
//     delete (an enqueue of the reconciliation that removes the copies once the entity
//     is gone), with Within, one deadline that bounds Before and the delete together (the
//     Settle/2 protocol: a reconciliation enqueued to run after the delete cannot run
//     before it; a delete not sent in time restarts the move,
//     TestArchiveEntityWithinDeadlineRestartsTheMove), and After, a prompt step once the
//     delete landed (a reconciliation visible at once), whose failure is only logged
//     when a Before covers it. After also runs when the delete's outcome is unknown (a
//     lost response) or the delete met a gone entity. A Removal without a Before (Inter
//     with SafetyDelay off) has After as its only step: its failure fails the move, and
//     a rerun that finds the entity gone and archived calls Gone on the companions that
//     implement Sweeper (Inter: one enqueue), so that the copies never outlive the
//     entity for want of a message (TestArchiveInterNoSafetyLostDeleteResponseStillRemovesCopies,
//     TestArchiveInterNoSafetyFailedNotifyIsOnlyLogged,
//     TestFailedAfterWithoutBeforeFailsTheMove,
//     TestGoneBeforeTheDeleteStillRunsAfter).
//
// A stop between Before and the delete leaves entity and copies in place and a message
// that finds the entity and keeps them; the rerun moves both
// (TestArchiveEntityStopBetweenBeforeAndDelete, TestArchiveInterCrashBetweenBeforeAndDelete,
// TestArchiveEventualCrashBetweenBeforeAndDeleteThenTwoDeliveries). A lost response
// after the transaction landed, and duplicate deliveries, end as for any move: the rerun
// finds the source gone and the copy written, and the copies went with the entity
// (TestArchiveIntraLostTransactionResponse, TestArchiveIntraTwoDeliveriesAtOnce,
// TestArchiveSamePartitionLostResponseAndTwoDeliveries). The entity is read back
// from storage: a companion refuses one it cannot find the copies of (it does not decode,
// its values are forged, or it is itself a copy) with errs.ErrInvalidInput, before
// anything is written, and the worker moves the job to the poison queue
// (TestArchiveIntraUnreadableAndForgedEntities). The delete and the companions'
// actions are checked as one transaction (repo.CheckTransaction: at most 100 actions,
// one table as spelled, one partition, one action per row, under 4 MiB) before the
// archive copy is written: forged index pages that list the entity a hundred times, or
// Options.Companions keyed in another spelling than the companions' own table, are
// refused (ErrInvalidInput, permanent) with nothing written
// (TestArchiveSamePartitionForgedPagesOverflowTheTransaction,
// TestSpellingMismatchRefusedBeforeWriting). A source table that does not exist
// as addressed (entity requests are case-sensitive on Azurite) is an error, not a
// missing entity (TestArchiveIntraCompanionsKeyedInAnotherCase).
//
// Consistency: copies in the partition are atomic with the move; copies elsewhere are
// eventually consistent, removed once the pattern's worker settles (as for any delete
// through that pattern). Cost: a companion's reads (Intra: one point query per index the
// entity has a value in; SamePartition: one range query; Inter, Eventual: none), its
// enqueues (Inter: two, Eventual: one), and the delete becomes one transaction of 1 + n
// actions instead of a delete. Without companions, or when no companion has anything to
// remove or run, the move sends exactly the requests it always did
// (TestArchiveEntityUnindexedMoveSendsTheSameRequests). The actions are sent in the
// archive's transaction, through the Archiver's client: build the companions' tables on
// the clients given to New (actions built on another client are refused with
// errs.ErrInvalidInput before the archive copy is written). The stock archiver
// binary knows no application types: a team's own archiver passes its indexes as
// Extensions.Companions of package queueworker/cmd/archiver/app, or an application runs
// the archive jobs in its own worker (New with Options.Companions, then Register).
//
// # Consistency and cost
//
// Eventual: between the enqueue and the worker's run, the entity is still in Current only;
// between steps 2 and 3 it is briefly in both. Readers that must see one copy read the
// Archive after the Current (or check both). An entity move costs one message, two reads,
// one write, one delete, and a message delete (six requests; a 404 on the delete adds
// two reads: the source, then the target); companions add their reads and enqueues, and turn the delete into a transaction
// (see "Index-aware moves"). The copy carries three more properties, SourceTableProperty,
// SourceETagProperty and SourceTimestampProperty (blob metadata for a blob copy, whose
// name holds the table), so a source entity with more than 249 custom properties cannot
// be archived to a table. A tiered archive (Hot -> Warm -> Cold: an archive archived
// again) keeps every hop's provenance: the Warm entity's own SourceTableProperty,
// SourceETagProperty and SourceTimestampProperty go unchanged into its Cold copy, and
// the Warm -> Cold hop records its own under the same names followed by its number
// ("ArchivedSourceETag2"; hop n writes the names followed by n, after the highest hop
// the entity records, so no hop ever writes over another's). The copy rule of each hop
// reads the highest hop its copy records, the one that wrote it
// (TestTieredArchiveKeepsEveryHopsProvenance). A range batch therefore reads whole
// copies from a target table (a $select cannot name the hops in advance). Two source tables may share a target table only if their keys
// never collide: a move never replaces a copy that records another source table (it
// refuses, ErrInvalidInput with the keys: TestRangeTwoSourcesOneTargetTable,
// TestEntityRefusesAnotherTablesCopy), nor a row of the target table that records
// no source table (TestMoveRefusesTargetRowThatRecordsNoSourceTable).
//
// # Errors
//
// The sentinels these docs name (errs.ErrNotFound, errs.ErrPreconditionFailed,
// errs.ErrInvalidInput, ...) are those of package
// github.com/tablepatterns/tablepatterns/errs: test them with errors.Is.
package consistency

// Package secondaryindex implements the two secondary index patterns of the Azure Table
// storage design guide ("Table design patterns": "Intra-partition secondary index pattern"
// and "Inter-partition secondary index pattern"): find entities by a property other than
// their keys, or list them in another order, with point and range queries instead of scans.
//
// Each pattern's algorithm is one file, the guide's steps in order:
//
// The algorithm: intra.go
//
// The algorithm: inter.go
//
// intra.go is the intra-partition index (Intra): every copy of an entity in its own
// partition, written by one entity group transaction. inter.go is the inter-partition
// index (Inter): the primary write between two queue messages, then the worker's
// reconciliation, which reads the primary again and brings every index copy in line.
// What hardens them sits beside them, each file named for what it handles:
// intra_outcome.go and inter_outcome.go (a transaction refused, or whose outcome is
// unknown), forged.go (a ref that names another entity's row), reserved.go (primary keys
// inside an index's key space), tombstone.go, telemetry.go (spans), owner.go (whose a
// unique copy is), archive.go, and the maintenance: backfill.go, verify.go, maintain.go
// and jobs.go. Options, constructors and reads are in intra_table.go, inter_table.go,
// intra_read.go, inter_read.go and inter_write.go; seams.go holds the one test seam.
//
// # The problem
//
// Table storage indexes PartitionKey and RowKey only. With employees stored under
// (department, employee id), finding one by email is a partition scan — every employee
// of the department read and filtered on the server — and there is no way to list them in
// email order.
//
// # The solution
//
// Store each entity several times, once per access path, under a key made of the value
// that path searches by. An Index names the path and says how to get its value from an
// entity; the key of a copy is the index name, "_", and the value, as in the guide.
//
// Intra keeps all copies in the entity's own partition, under RowKey prefixes:
//
//	PartitionKey  RowKey                      properties
//	Sales         empid_000223                EmployeeId FirstName LastName Age Email
//	Sales         email_jonesj@contoso.com    EmployeeId FirstName LastName Email
//
//	employees, _ := repo.New[Employee](clients.Tables, "Employees", nil)
//	x, _ := secondaryindex.NewIntra(employees, byID, []secondaryindex.Index[Employee]{byEmail}, nil)
//	err := x.Insert(ctx, &e)                                        // both copies, one transaction
//	e, err := x.Lookup(ctx, "Sales", "email", "jonesj@contoso.com") // one point query
//	for e, err := range x.Range(ctx, "Sales", "empid", "000100", "000200", nil) { ... }
//
// Inter, which may own several tables (Index.Table), takes the service client, the
// primary table's name and the queue of its reconciliation messages:
//
//	x, _ := secondaryindex.NewInter(clients.Tables, "Employees", queue, []secondaryindex.Index[Employee]{byEmail}, nil)
//
// Both variants have the same method set for the same operations — Get, Lookup, Find,
// Range, Prefix, Insert, Update, Upsert, Delete, CreateIfNotExists, DeleteTable, Table,
// Name, and the maintenance methods — with the same signatures, so code written against
// one reads the same against the other. The reads take a *ReadOptions: for Inter, Verify
// checks each hit against the primary; for Intra, whose copies are written in the
// primary's transaction, it is already kept and costs nothing, and it is refused on an
// index with Properties, whose copies cannot be checked (TestIntraReadOptions). Update
// takes the value read (its ETag makes it conditional). Get and Delete take the entity's
// keys, as every pattern of this module does: Get(ctx, pk, rk) and Delete(ctx, pk, rk,
// opts), with opts.ETag for a conditional delete. Intra stores its entity under the
// primary copy's RowKey, the primary index's name, "_" and the primary value (the guide's
// "empid_000223"); reading by a value, the primary's included, is Lookup (unique) or Find.
// Intra's Delete also takes the keys of any copy of the entity (the RowKey of a value read
// through Lookup or Find), which it reads once to find the entity; Inter's takes the
// primary's keys, which every value it returns carries.
//
// Inter keeps the copies in other partitions — "email_Sales" holds the email index of
// the Sales department — or other tables, when one partition could not take the load:
//
//	PartitionKey  RowKey                          (primary: Sales / 000223)
//	email_Sales   jonesj@contoso.2Ecom!000223     EmployeeId FirstName LastName Email
//	email_Sales   !000223                         Key SourceETag   (bookkeeping, see below)
//
// The partitions "<index>_<PartitionKey>" of an index kept in the primary's table (the
// default) are reserved: a primary PartitionKey that starts with an index's name and "_"
// ("email_Sales", or "user_42" under an index named "user") is refused by every write,
// Notify and Reconcile before anything is sent, since the copies of another partition
// would overwrite it and a reconciliation would delete it. Keep such an index in a table
// of its own (Index.Table) to use those keys (TestInterPrimaryPartitionInIndexKeySpaceIsRefused).
//
// A copy of an Intra index with duplicates (AllowDuplicates), and every copy of an Inter
// index, is keyed by the value and then the primary's key, joined with the escaped,
// order-preserving encoding of package keys ('.' is written ".2E"): keys stay unique,
// sort by value first, and any value works. Unique Intra copies use the guide's plain
// "email_" + value, and values that no key can hold ('/', '\', '#', '?', control
// characters) are refused before anything is sent, naming the index.
//
// An index may normalize its values (Index.Normalize): with strings.ToLower, an email
// index keys "Ann@Example.com" as "ann@example.com" on every write and lower-cases the
// value of every read, so Lookup(ctx, "Sales", "email", "ANN@example.com") finds it
// (TestIntraNormalizeAppliesOnWriteAndLookup, TestInterNormalizeAppliesOnWriteAndLookup).
// Keys are made of normalized values: changing Normalize needs a rebuild of the index.
//
// A copy may carry only the properties its queries need (Index.Properties). Reads through
// it return the other fields zero, and Intra refuses to write such a value back.
//
// # Consistency
//
// Each promise of order or atomicity below names, in parentheses, the test that attacks
// it at its narrowest window: most hold one request at a fault proxy (a pause) while the
// competing operation runs to completion, so the interleaving is exact.
//
// Intra is atomic. Insert writes every copy in one entity group transaction
// (TestIntraUniqueViolationIsAtomic, TestIntraFaultsDuringWrites). Update reads the
// primary copy (for the old values) and then, in one transaction conditional on what it
// read, replaces the copies whose value is unchanged, deletes the copies of old values and
// inserts those of new values: a reader never sees an entity under both its old and new
// email, nor under neither (TestIntraWindowReadersSeeOldOrNewNeverBoth). A unique index
// (the default) makes a write that would give a value to a second entity fail as a
// whole, with a *UniqueViolationError naming the index. Concurrency is optimistic: a
// value read through any copy carries that copy's ETag, and a write from it fails with
// errs.ErrPreconditionFailed if any copy changed since, because every write rewrites every
// copy (TestIntraOptimisticConcurrency, TestIntraWindowConcurrentUpdate); the error names
// the entity's PartitionKey and primary copy and says that its ETag changed
// (TestIntraStaleETagErrorNamesTheEntity). Without an ETag
// a write is last-writer-wins, retried with jittered backoff when a concurrent writer
// moves the entity between its read and its transaction (TestIntraWindowConcurrentUpdate).
//
// On a store that cannot delete a key holding U+2028 or U+2029 inside a transaction
// (Azurite; see package tabletest) the delete of such a copy (or primary copy) goes in a
// request of its own right after the transaction (repo.SubmitOrSplit): there, and only
// there, readers may see the transaction's writes before that delete, and a process that
// stops between the two leaves that row until Repair removes it. The service never takes
// that path (TestIntraUpdateRemovesOldCopyWhenValueHasLineSeparator,
// TestIntraDeleteRemovesEveryCopyWhenValuesHaveLineSeparator; for Inter's reconciliation
// TestInterReconcileRemovesOldCopyWhenValueHasLineSeparator).
//
// Intra cannot swap the unique values of two entities in one call: each call writes one
// entity, and whichever goes first would give its new value to a second entity. A swap
// is three writes through a temporary value (or no value: an entity without one has no
// copy in that index): A lets go of its value, B takes it, A takes B's old one. Readers
// see the intermediate states, and a stop between the writes is finished by running the
// rest (TestIntraSwapUniqueValuesTakesThreeWrites).
//
// Inter is eventually consistent (the design guide's "Eventually consistent transactions
// pattern"): an entity group transaction cannot span partitions. A write is three steps,
// each safe to interrupt:
//
//  1. enqueue a reconciliation message for the entity, invisible for SafetyDelay;
//  2. write the primary entity;
//  3. enqueue the same message, visible at once.
//
// One deadline, SafetyDelay/2 from the moment before step 1, bounds steps 1 and 2
// together: the message becomes visible SafetyDelay after the queue stored it, so the
// write can never land after it ran, however slow the enqueue or its response
// (TestInterWriteBudgetCoversTheSafetyEnqueue: a slow enqueue leaves no time to write).
// A stop after 1 leaves a message that finds nothing to change; a stop after 2 leaves the
// message of 1, which reconciles the entity once it becomes visible
// (TestInterCrashBetweenEnqueueAndPrimaryWrite, TestInterCrashBetweenPrimaryWriteAndEnqueue).
// The worker's handler (Register; Reconcile is its body) trusts nothing in the message but
// the keys: it reads the entity and brings every index in line with it. To know which copy
// to delete when a value changes, each index partition holds one small "ref" row per
// entity (RowKey "!" + its key, below every copy) that records the key of the copy
// written and the ETag of the primary it was made from. Per index, a reconciliation reads
// the ref, then the primary, and, unless the ref records exactly that version of the
// primary, runs one transaction in the index partition: the new copy, the deletion of the
// old one, and the ref, conditional on the ref's ETag (an insert when there is none). A ref
// is never deleted: an entity without a copy in an index (deleted, or without a value)
// keeps a tombstone ref (no Key), written even by the first reconciliation of an entity
// that never had a copy, so that every decision rests on a ref version that any other
// decision must change first. Hence:
//
//   - duplicated, reordered and replayed messages all reconcile the current state, and a
//     message about an old state changes nothing stale
//     (TestInterReconcileDuplicatedReorderedReplayed, TestInterDuplicatedMessagesThroughWorker);
//   - two reconciliations of one entity are serialized by the ref's ETag; the one that
//     loses starts over from fresh reads, and the ref is read before the primary, so the
//     reconciliation that commits last read the newest primary
//     (TestInterStaleReconcilerStartsOver, TestInterConcurrentReconciles). A slow
//     reconciliation that read "no copy yet, the primary has the value" and commits after
//     the entity was deleted (or lost the value) and that was reconciled meets the
//     tombstone and starts over, instead of leaving a copy of a deleted entity
//     (TestInterWindowDeleteDuringSlowReconcile, TestInterWindowValueRemovedDuringSlowReconcile).
//     A tombstone of a gone primary records the one state that can come back ("gone" has
//     no version): a reconciliation that writes copies over one (the keys were used
//     before) reads the primary again after its transaction, and starts over if it went
//     or changed meanwhile, since a reconciliation of that delete finds the tombstone up
//     to date and writes nothing
//     (TestInterSlowReconcileOfAReinsertedEntityDeletedAgainLeavesNoCopy);
//   - a reconciliation stopped between two indexes is finished by any later one
//     (TestInterReconcileStoppedBetweenSteps).
//
// Tombstones cost one small row per entity and index; CollectTombstones removes those
// older than InterOptions.TombstoneAge (1 hour by default), each conditional on its ETag,
// and every reconciliation attempt is bounded to half that age, so no reconciliation that
// read the state before a tombstone existed can still commit when it goes
// (TestInterCollectTombstones).
//
// A transaction whose outcome repo cannot prove (errs.ErrOutcomeUnknown: a lost response,
// then a retry that met a conflict) is decided again from fresh reads: a reconciliation
// starts over (the ref says what is written); an Intra Update, Upsert or Delete decides
// with repo.DecideOutcome: a copy still at the version its action was conditional on
// proves nothing landed, and the change starts over; anything else returns the
// errs.ErrOutcomeUnknown error, with or without an ETag, and for Insert: never success
// (an entity found, changed or gone may be another writer's doing since, and writing
// again would undo it), nor errs.ErrNotFound, errs.ErrPreconditionFailed or a
// *UniqueViolationError ("nothing written") for a write that may have landed
// (TestIntraNeverUndoesAnotherWriterAfterAnUnknownOutcome). Turn on
// repo.Options.TrackWrites to have repo recognise its own write exactly.
//
// Between a write and its reconciliation, a copy may be missing or stale: Find can return
// an entity that no longer has the value, or two entities for a unique value. Lookup
// always verifies; a reader of Find, Range or Prefix that cannot accept stale hits asks
// for ReadOptions.Verify: each hit is checked against the
// primary (and returned as the primary holds it), stale hits are dropped and their
// repair enqueued. Uniqueness cannot be enforced across partitions without a
// transaction, so an Inter index never refuses a duplicate; it keeps both entities
// findable.
//
// A value that can never be indexed (a '#' in an email) is refused by Inter's writes
// before anything is sent. Written around this package and then reconciled, it is
// removed from that index, the other indexes are still reconciled, and the message goes
// to the poison queue with the reason (TestInterUnindexableValueIsPoisoned); so is an
// index whose partition key the entity's PartitionKey would make too long
// (TestInterReconcileKeepsOtherIndexesWhenOnePartitionKeyIsTooLong).
//
// # Cost in requests
//
// Intra: Insert 1 transaction; Update, Upsert and Delete 1 read and 1 transaction (more
// only when a concurrent writer wins; a Delete by a copy's key reads that copy first); Get
// and Lookup 1 point query; Find, Range and
// Prefix 1 range query per 1,000 entities. A partition holds 1 + (number of indexes)
// entities per logical entity, and an update changes them all, so the partition's
// throughput target is shared by every copy (the design guide's "Issues and
// considerations" of the pattern; "Designing a scalable partitioning strategy").
// BenchmarkFindByEmail compares a lookup by email with the partition scan it replaces.
//
// Inter: a write is 2 enqueues and 1 write (1 enqueue with SafetyDelay -1); a
// reconciliation reads 1 ref per index and the primary, plus 1 transaction per index whose
// ref does not record the primary's current version (the second message of a write finds
// nothing to do; the first reconciliation of an entity without a value in an index writes
// its tombstone; one that writes over the tombstone of a gone primary reads the primary
// once more); Lookup is 1 range query and 1 point query per hit; Find, Range and
// Prefix 1 range query per 1,000 copies, plus 1 point query per hit with Verify;
// CollectTombstones 1 range query per index and 1 delete per tombstone removed.
//
// # Maintenance: backfill, verify, repair
//
// An index added to a table that already holds data, or copies that drifted after writes
// around this package, are brought in line partition by partition, from code or through
// the worker:
//
//	cp, err := x.BackfillPartition(ctx, "Sales", &secondaryindex.BackfillOptions{After: saved.After})
//	err = x.StartBackfill(ctx)             // one job per partition; Register handles them
//	r, err := x.Verify(ctx, "Sales", nil)  // r.Missing, r.Stale, r.Orphan, r.Conflict, r.Unindexable, r.Samples
//	r, err = x.Repair(ctx, "Sales", nil)
//	err = x.StartVerify(ctx, "Sales")      // the same as jobs: VerifyKind, RepairKind
//	err = x.StartRepair(ctx)
//
// BackfillPartition reads the partition's primaries page by page and returns (and hands
// BackfillOptions.Checkpoint after each page) the last RowKey done, so a stopped backfill
// resumes from there (TestInterBackfillResumesFromCheckpointAfterKills). A job backfills up
// to 1,000 entities and enqueues the rest of its partition from its checkpoint, so the
// partitions run in parallel on the worker's slots and a worker stopped anywhere leaves a
// job that resumes; duplicated, reordered and stale jobs only repeat idempotent work
// (TestInterBackfillDuplicatedReorderedJobsAndLiveWrites). A job whose payload is not a
// valid checkpoint is poisoned (TestInterBackfillJobWithBadPayloadIsPoisoned).
//
// Verify and repair run as jobs too, one per partition (StartVerify, StartRepair; kinds
// VerifyKind and RepairKind, handled by the same Register; Intra's on IntraOptions.Queue).
// A verify job writes nothing and logs one line, "index verify", on the primary table's
// logger (repo.Options.Logger): the partition, the counts (entities, copies, missing,
// stale, orphan, conflict, unindexable, drift) and the samples as keys only — drift kind, index, the
// entity's PartitionKey and RowKey, never the copy's key (it holds the indexed value) nor
// any property (TestVerifyJobLogsCountsAndKeysOnly). A repair job runs Repair and logs
// "index repair" with repaired set. Each takes its partition whole (Verify and Repair have
// no resume point; a redelivered job reruns it). Payloads are untrusted: an empty or
// invalid PartitionKey, an index partition, or a resume point on a verify or repair job
// is cancelled into the poison queue before any request. A duplicated job logs twice; two
// deliveries of one repair job at once are harmless, the second's conditional writes
// making the first start over (TestInterRepairJobDeliveredTwiceAtOnce). The archiver
// binary runs these jobs for a team's own indexes: see app.MainWith in
// queueworker/cmd/archiver/app and examples/indexarchiver.
// A job costs what its call costs, plus 1 enqueue (and the worker's dequeue and
// delete) per partition, and for Start without partitions 1 query per partition listed.
//
// Consistency: backfill and repair write through the live path, so the application may
// keep writing (TestInterBackfillWhileWritersWrite: 1,200 employees, 10,000 under make soak,
// backfilled by the worker while 4 writers insert and update, end with no drift). Inter
// reconciles every entity whose ref does not record the version its page read with
// Reconcile, whose conditional transaction on the ref never replaces a copy that a newer
// reconciliation wrote (the attack holds the backfill after its reads while a live update
// and its reconciliation commit). Repair forces the same transaction for the entities
// Verify found drifted (a copy deleted or edited by hand is rewritten even though the ref
// looks current) and deletes the orphans, one forced transaction per orphan, each
// conditional on the ref read just before it; held while a live update and its
// reconciliation commit, it fails its condition and starts over
// (TestInterWindowRepairHeldWhileLiveUpdateCommits, TestInterRepairTwoOrphansOfOneEntity,
// TestInterRepairSecondOrphanBecomesRealCopyInWindow). Intra rewrites each entity in
// one transaction conditional on the ETag its page read (the primary copy merged, so
// properties T does not declare stay: TestIntraBackfillKeepsUndeclaredProperties):
// an entity changed since was rewritten whole by that write
// (TestIntraWindowBackfillCannotOverwriteALiveUpdate). A unique copy is read first and
// never taken over from another entity: data older than the index where two entities
// share a value keeps the copy with the first, and Verify reports the other as a Conflict
// (drift) that Repair leaves (TestIntraBackfillUniqueDuplicateInOldData,
// TestIntraVerifyReportsUniqueConflictRepairLeavesIt); a missing one is inserted, so a live
// write that claims the value meanwhile keeps it
// (TestIntraBackfillHeldWhileLiveInsertClaimsTheValue). Intra's Repair deletes an
// orphan conditional on its ETag, after reading every primary again (TestIntraVerifyFindsAndRepairsDrift,
// TestInterVerifyFindsAndRepairsDrift). Verify is read-only and reads the primaries and
// the copies one after the other, not as one snapshot: an entity written meanwhile can
// show as drift; Repair decides again from fresh reads. An entity stored around this
// package with a value no copy key can hold (over 1 KiB with the index's name, or, for
// Inter, a PartitionKey whose index partition "<name>_<pk>" would break the key limit)
// is counted Unindexable, which is drift: a verify never reads such a partition as clean
// (TestInterVerifyJobLongPartitionNeverReadsClean,
// TestInterVerifyJobUnindexableValueNeverReadsClean,
// TestIntraVerifyJobUnindexableValueNeverReadsClean); Repair leaves it, as a backfill does.
//
// Cost: a backfill pays about one write of every entity through the index (Inter:
// Reconcile's 2 reads and 1 transaction per entity not up to date, plus 1 query of refs
// per page; Intra: per entity 1 read per unique index with a value, 1 more of the entity
// a copy names when it names another, and 1 transaction,
// and every backfilled entity gets a new ETag); a rerun over an up-to-date Inter index only reads. Verify reads the
// partition's primaries and its copies (1 query per 1,000); Repair adds per drifted
// entity a reconciliation (Inter) or an Update (Intra), and per Intra orphan 1 read, 1
// more query of the primaries and 1 delete. BenchmarkBackfill measures entities/s.
//
// Throughput: the service serves each partition at its own rate, so a backfill or repair
// of partition pk bounds what it sends to the partition it writes. Intra writes pk
// itself; Inter writes "<index>_<pk>", the same partition for every entity of pk, one per
// index, one transaction at a time per entity (Reconcile writes its indexes one after the
// other). Both run their entities on retry.Schedule keyed by that partition (Inter: its
// first index's): at most 2 entities at once, so at most 2 transactions in flight in
// every partition written, each marked with the partition so that the client's Gate
// slows a busy partition alone; the partitions of a table run in parallel as jobs on the
// worker's slots. One hot department and six cold ones, backfilled or repaired at once
// through a model of the partition targets: no partition has more than 2 requests in
// flight, the hot one is refused, the cold ones are done before it ends
// (TestInterBackfillSpreadsWritesOverPartitions, TestInterRepairSpreadsWritesOverPartitions,
// TestIntraBackfillPartitionSpreadsWritesOverPartitions). Intra's Backfill (bulk) writes
// through repo.BulkWrite, the same scheduler across its items' partitions
// (TestIntraBackfillSpreadsWritesOverPartitions).
//
// # Archiving an indexed entity
//
// Both variants are companions of the archive (package consistency: list the index under
// the table in consistency.Options.Companions, built on the Archiver's clients). An
// archive move of an entity then leaves no copy that a lookup can find; the copies are
// removed, not re-created in the archive table (an index covers its own table).
//
//   - Intra: Removal reads the entity's copies (one point query per index in which it has
//     a value, and one of the entity a copy names when it names another) and the move
//     deletes them If-Match in the transaction that deletes the
//     entity: atomic. A copy changed meanwhile (a live Update) fails the transaction and
//     the move starts over from fresh reads
//     (TestArchiveIntraRemovesCopiesInTheDeleteTransaction,
//     TestArchiveIntraWriterBetweenRemovalAndTransaction,
//     TestArchiveIntraLostTransactionResponse, TestArchiveIntraTwoDeliveriesAtOnce).
//   - Inter: the move follows the write protocol above: the safety reconciliation is
//     enqueued before the delete, the delete is bounded to SafetyDelay/2 with it, and the
//     prompt one is enqueued after; the worker finds the entity gone and removes its
//     copies (TestArchiveInterRemovesCopiesThroughTheWorker,
//     TestArchiveInterCrashBetweenBeforeAndDelete,
//     TestArchiveInterLostResponseAndTwoDeliveries). With SafetyDelay off the
//     prompt reconciliation is the only one: it is enqueued also when the delete's
//     response was lost, its failure fails the move, and a rerun that finds the entity
//     archived enqueues it again (Inter is a consistency.Sweeper)
//     (TestArchiveInterNoSafetyLostDeleteResponseStillRemovesCopies,
//     TestArchiveInterNoSafetyFailedNotifyIsOnlyLogged).
//
// Archived rows are stored data: Intra refuses (errs.ErrInvalidInput, nothing written) a
// primary copy that does not decode or whose primary value is not its own key, a value no
// key can hold, and a copy archived as if it were an entity. Whose a copy of a unique
// index is, one rule decides (the owner rule), for the move, Verify, Backfill and Repair
// alike, so they cannot disagree:
//
//   - A copy that carries the entity's primary value (decoded, encrypted properties
//     included) is the entity's.
//   - A copy that names another entity is that entity's only if it is a live entity whose
//     value gives the copy's key: one point read of the named entity's primary copy
//     (Verify, which has loaded the partition, reads nothing more). A name that is
//     gone or holds another value names nobody: the copy is drift, Stale to Verify,
//     rewritten as the entity's by Backfill and Repair, removed by a move of the entity
//     that has the value (TestOwnerCopyOfVanishedOwnerNamesNobody,
//     TestOwnerBackfillTakesCopyWhoseNamedOwnerHoldsAnotherValue,
//     TestOwnerEncryptedCopyRenamedToNobodyGoesWithTheMove).
//   - A copy without a primary value (the index's Properties leave it out) is the
//     entity's when every stored property equals what the entity's own writes store.
//     Content equality cannot tell two equal projections apart: when two live entities
//     share the value and their projections are equal, a move of either removes the
//     copy. Keeping it would leave every archived entity of a partial unique index
//     findable by its value; removing it loses the other entity's copy only in a state
//     Verify reports as a Conflict, and after the move Verify reports that copy Missing
//     and Repair writes it (TestOwnerPartialCopyEqualToTwoProjections). A partial
//     copy that differs from the entity's projection is left
//     (TestArchiveIntraPartialCopyOfAnotherEntityIsKept,
//     TestArchiveIntraPartialCopyTakenOverByBackfillIsKept).
//   - Anything else (a copy that does not decode; an encrypted copy without the primary
//     value) has an unknown owner: never taken for the archived entity's; Stale to Verify
//     when one entity has the value, rewritten by Repair, after which a move removes it
//     (TestArchiveIntraEncryptedCopyOfAnotherEntityIsKept,
//     TestIntraEncryptedUniqueCopyOneOwnerRule).
//
// Verify reads the whole partition, so two live entities with one unique value are a
// Conflict whatever the copy holds: every one of them but the one the copy is proven to
// be (all of them when it is proven none's). Conflicts count in Report.Drift: lookups by
// that value cannot find each entity that has it. Repair leaves them; change a value.
//
// The properties that name a copy's owner are plaintext unless the type encrypts them,
// and encryption binds only what it encrypts: on a type with encrypted fields, a writer
// of the table who holds no key can rename a copy's owner. The rule above makes a rename
// to a name that does not hold the value harmless (drift that Repair and moves clean),
// but a rename to another live entity that holds the same value (a Conflict) is
// believed. An index on such a type that must not trust the table's writers encrypts the
// primary value's property too (tag it encrypt): a renamed copy then fails
// authentication, no lookup returns it, Verify reports it Stale and Repair writes it
// again (TestOwnerEncryptedOwnerPropertyBindsTheCopy).
//
// A copy, or the primary copy of the entity it names, that cannot be decrypted because
// the key holder is out of reach, or cannot be read for a transient failure, is not of
// unknown owner: nothing is decided, and the move, Verify, Backfill or Repair fails and
// runs again (TestIntraKeyHolderOutageDecidesNoOwner,
// TestOwnerContextCancelledDuringCopyDecodeDecidesNothing). Such errors name the
// index and the entity's primary keys and give the cause's class only ("503
// ServerBusy", "key unavailable: ..."), never the copy's key, which holds the indexed
// value; errors.Is and errors.As reach the cause (TestOwnerCopyErrorsNameTheEntityNotTheValue,
// TestOwnerKeyOutageNeverLogsTheIndexedValue). Copies of an index with
// duplicates name their entity in their key. Inter needs only the keys (its refs name the
// copies), so an entity whose values do not decode is archived and cleaned all the same,
// and a row of an index partition is refused (TestArchiveIntraUnreadableAndForgedEntities,
// TestArchiveInterUnreadableAndForgedEntities). A ref is stored data too: every
// reconciliation deletes the copy a ref names only when its key is a copy key of the
// ref's own entity (value, then that entity's RowKey); a ref that names another row is
// rewritten and the row left alone, with a warning
// (TestArchiveInterForgedRefNamesAnotherEntitysCopy).
//
// # Issues and considerations
//
//   - Pad numbers (keys.Pad) so that ranges and order are numeric, as the guide says of
//     "empid_000223".
//   - The primary value of Intra identifies the entity and cannot change: delete the
//     entity and insert it again under the new value.
//   - Duplicating is cheap, but every copy counts against the partition's targets (Intra)
//     and the storage bill: copy only what the queries need (Index.Properties).
//   - Writing the primary table of an Inter around it (repo, another program) leaves the
//     copies stale until Notify is called for the entity.
//
// # Errors
//
// The sentinels these docs name (errs.ErrNotFound, errs.ErrPreconditionFailed,
// errs.ErrInvalidInput, ...) are those of package
// github.com/tablepatterns/tablepatterns/errs: test them with errors.Is.
package secondaryindex

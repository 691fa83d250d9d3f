// Package indexentity implements the index entities pattern of the Azure Table storage
// design guide ("Table design patterns": "Index entities pattern"), with all three of its
// options.
//
// # The problem
//
// Table storage indexes PartitionKey and RowKey only. An application that keeps employees
// under (department, employee id) can read one employee with a point query, but "every
// employee named Jones" is a scan: of the partition (a department) or of the whole table.
// Last names are not unique, so the intra-partition secondary index (a copy of the entity
// per value, see patterns/secondaryindex) does not fit; what is needed is, for each last
// name, the list of the employees that have it.
//
// # The solution: a list per value, three places to keep it
//
// A lookup reads the list for the value, then the entities it names with point queries
// (here: at most Concurrency at once). The guide keeps the list in one of three places:
//
//   - Option 1, a blob per value (BlobStore with Eventual): one blob per last name listing
//     the PartitionKey and RowKey of each employee, across the table. No size limit.
//   - Option 2, an index entity in the entities' own partition (SamePartition): RowKey
//     "idx!LastName!Jones!000000" next to the employees of Sales, listing their RowKeys
//     (employee ids) in a property "IDs". It is changed together with the employee in one
//     entity group transaction, so it is always exact, but it only answers per partition
//     ("the Joneses of Sales").
//   - Option 3, an index entity in another partition or table (TableStore with Eventual):
//     partition "idx!LastName!Jones", listing PartitionKey and RowKey of every Jones across
//     the table (the guide's EmployeeDetails: department and id pairs).
//
// Option 2, in the guide's order (read the value's index entity; one transaction that
// writes the entity and the index entity If-Match its ETag; start over on a conflict):
//
// The algorithm: samepartition.go
//
// Options 1 and 3, in the order of the eventually consistent transactions pattern
// (enqueue the Change, write the entity; the worker reads the entity and makes the lists
// agree with it):
//
// The algorithm: eventual.go
//
// Their edges live beside them: samepartition_options.go and eventual_options.go
// (options, constructors, validation, accessors), transaction.go (option 2's
// transaction, sent apart only where the store cannot delete a key in one), steps.go
// (option 1 and 3's enqueue and list changes), handle.go (the message and its settle
// window), list.go (the pages of a list), tablestore.go and blobstore.go (where options
// 3 and 1 keep their lists), backfill.go, maintain.go and jobs.go (backfill, verify,
// repair), archive.go (the archive's companions), seams.go (the one test seam).
//
// Every constructor takes the table it works on first, then its required arguments, then
// options by pointer (nil = the documented defaults); the logger is the table's:
//
//	emps, _ := repo.New[Employee](clients.Tables, "Employees", nil)
//	ix2, _ := indexentity.NewSamePartition(emps, "LastName", lastName, nil)              // option 2
//	store, _ := indexentity.NewTableStore(indexTable, "LastName", nil)                   // option 3's lists
//	ix3, _ := indexentity.NewEventual(emps, "LastName", lastName, store, queue, nil)     // options 1 and 3
//
// Its messages have the kind "indexentity.change.<table>.<name>" and its maintenance jobs
// "indexentity.backfill|verify|repair.<table>.<name>", so that indexes named alike on two
// tables never share a kind (TestEventualKindsNameTheTable,
// TestSamePartitionJobKindsNameTheTable); Register takes those kinds only
// (TestEventualRegisterTakesOnlyKindsThatNameTheTable).
//
// The two kinds of index share their method names and shapes, those of every index of this
// module: Get(ctx, pk, rk) and Delete(ctx, pk, rk, opts) by the entity's keys, and Find,
// an iterator (iter.Seq2[T, error]) over the entities with a value, since an index entity
// lists many (a non-unique index). Find differs by one argument, on purpose:
// SamePartition.Find(ctx, pk, value, opts) answers within one partition (option 2 keeps
// one list per partition and value), Eventual.Find(ctx, value, opts) across the table
// (options 1 and 3 keep one list per value). Collect it with a range loop when a slice
// is wanted; breaking out of it early leaves the remaining entities unread.
//
// An index may normalize its values (SamePartitionOptions.Normalize,
// EventualOptions.Normalize): with strings.ToLower, "Jones" and "JONES" share one list, and
// a Find of "jOnes" finds them both (TestSamePartitionNormalizeAppliesOnWriteAndFind,
// TestEventualNormalizeAppliesOnWriteAndFind). Lists are keyed by normalized values:
// changing Normalize needs a rebuild of the index.
//
// Keys are built with the escaped, order-preserving encoding of codec/keys, so a value may
// hold anything ("O'Brien", "a/b", non-ASCII); only its length is bounded (the index key
// must stay within 1 KiB, a blob name within 1,024 characters), and a longer value is
// refused before any request.
//
// # Lists that grow: spilling instead of failing
//
// The guide assumes a list stays under an entity's 1 MiB; a string property holds even
// less, 64 KiB (of UTF-16). Options 2 and 3 never meet either limit: a list is kept in
// pages, index entities numbered 000000, 000001, ..., each holding at most PageBytes (64
// KiB by default, about 4,600 six-digit ids) in one string property. An id goes to the
// first page with room; when all are full a new page is inserted; a page emptied by
// removals is deleted. The pages of one value are adjacent keys, read with one range
// query. Every write touches at most three pages of at most 64 KiB (a rename: one removed
// from, one added to), so a transaction stays far below the 4 MiB and 100-action limits
// however long the lists get, and nothing can fail late. An entry larger than a page (an
// id over PageBytes) is refused before any request. Option 1 has no such limit: a blob
// simply grows, each change rewriting it.
//
// # Consistency
//
// Each promise of order or atomicity below names, in parentheses, the test that attacks
// it at its narrowest window: a request held at a fault proxy (a pause) or the test seam
// while the competing operation runs to completion, so the interleaving is exact.
//
// Option 2 is atomic. Insert follows the guide's steps: read the value's index entity
// (keeping its ETag), submit one transaction that inserts the employee and updates the
// index entity with If-Match on that ETag, and start over from the read when the
// transaction fails with 412 (another writer updated the index entity), 409 (another
// writer created it first: the first-creation race) or 404 (another writer deleted it
// with its last id), with jittered backoff (retry.Optimistic with retry.Conflict())
// (TestSamePartitionWindowIndexEntityChangesUnderInsert for 412 and 404,
// TestSamePartitionFirstCreationRace for 409). An insert whose id is already listed sends
// the page it read back as a guard, so a concurrent delete of that entry cannot leave the
// new entity unlisted (TestSamePartitionInsertRacesDeleteOfTheSameID). A rename is one
// transaction of three entities (the employee, the old value's index entity and the new
// value's), a delete one of two. No id is ever lost or duplicated, and readers never see
// the employee without its index entry or the reverse (TestSamePartitionFaults,
// TestSamePartitionConcurrentMixedWrites). A transaction whose outcome repo cannot prove
// (errs.ErrOutcomeUnknown: a lost response, then a retry that met a conflict) is decided
// by repo.DecideOutcome from a fresh read of the entities it would have changed
// conditionally: one still at the version read proves the atomic transaction did not
// land, and the call starts over; anything else returns the errs.ErrOutcomeUnknown error,
// never success nor errs.ErrAlreadyExists alone ("nothing written"): an entity found or
// gone may be another writer's doing since, and writing again would undo it
// (TestSamePartitionOutcomeUnknownIsRedecided,
// TestSamePartitionNeverUndoesAnotherWriterAfterAnUnknownOutcome). Turn on
// repo.Options.TrackWrites to have repo recognise its own write exactly.
//
// On a store that cannot delete a key holding U+2028 or U+2029 inside a transaction
// (Azurite; see package tabletest) the delete of an entity or index entity whose key
// holds one goes in a request of its own right after the transaction
// (repo.SubmitOrSplit): there, and only there, readers may see the transaction's writes
// before that delete, and a process that stops between the two leaves it until Repair.
// The service never takes that path
// (TestSamePartitionDeleteRemovesEntityAndIndexWhenKeyAndValueHaveLineSeparator; for
// TableStore's emptied pages
// TestTableStoreRemoveDeletesEmptyPageWhenValueHasLineSeparator).
//
// Options 1 and 3 are eventually consistent: the list lives where no transaction reaches.
// Each write follows the message-first discipline of the eventually consistent
// transactions pattern:
//
//  1. enqueue a Change naming the entity, the value it will have and the value it had;
//  2. write the entity.
//
// One deadline, Settle/2 from the moment before the Change is built, bounds both steps
// (the Settle/2 protocol, shared with patterns/denormalize),
// so the write lands before the message is Settle old by its EnqueuedAt however slow the
// enqueue (TestEventualWindowSlowEnqueueCannotOutliveSettle). EnqueuedAt is untrusted (the
// envelope is whoever enqueued's): it is clamped to the queue's InsertionTime, so a forged
// future stamp cannot keep a message snoozing
// (TestEventualForgedFutureEnqueuedAtStillSettles).
//
// A queueworker handler (Eventual.Register) then reconciles: it reads the entity, lists
// its key under its current value, removes it from the lists of the old values the
// message names, and reads the entity again, starting over if it changed meanwhile. It
// trusts nothing in the message but the keys, so duplicated, reordered and replayed
// messages, concurrent handlers and a stop at any point all end in the same lists
// (TestEventualMessagesDuplicatedReorderedReplayed, TestEventualReconcileRacesWithRename,
// TestEventualConcurrentReconcilesLoseNoKey). When the handler finds the entity not yet
// in the state the message announces (the write has not landed, failed, or was
// overtaken), it reconciles what it finds and, while the message is younger than Settle,
// snoozes it to look again: a stop between steps 1 and 2 therefore ends with the message
// settling and changing nothing (TestEventualCrashBetweenSteps, TestEventualHandleSettles).
// The stores' Add and Remove have set semantics, so a write of theirs that repo reports
// as errs.ErrOutcomeUnknown is simply decided again from a fresh read. Find checks every
// entity it fetches against the value, so a reader never gets a wrong entity; it may miss
// one written in the last moments (TestEventualFindVerifiesHits).
//
// The guide's trade-off holds: option 2 serialises all writers of one value in one
// partition through one index entity (contention shows up as conflict retries; see the
// partition's scalability targets in "Designing a scalable partitioning strategy"), while
// options 1 and 3 take that load off
// the partition and answer across partitions, at the price of eventual consistency.
//
// # Cost in requests
//
// Option 2: Insert 2 (a range query of the value's pages, a transaction), plus 2 per
// conflict; Update 2 when the value is unchanged (a read, a transaction), 4 for a rename
// (a read, two range queries, a transaction); Delete 3; Find 1 + n point queries for n
// entities, run in parallel; IDs 1; Get 1.
//
// Options 1 and 3: Insert 2 (an enqueue, a write); Update 2 (read, write) or 3 when the
// value changes (read, enqueue, write); Delete 3. The handler: 2 reads of the entity plus,
// per value touched, a read of the list and a write when it changes (a blob or one page),
// plus the queue's own dequeue and delete. Find 1 + n point queries; Get 1.
//
// # Maintenance: backfill, verify, repair
//
// BackfillPartition lists the entities of one partition that already held data when the
// index was added, page by page, resumable from the Checkpoint it returns (and hands
// BackfillOptions.Checkpoint after each page); StartBackfill enqueues one job per
// partition and Register handles them (a job does 1,000 entities and enqueues the rest
// from its checkpoint; SamePartitionOptions.Queue carries the jobs of option 2). Verify
// reports, read-only, the entities listed nowhere (missing), listed only under another
// value (stale) and the entries of entities gone or listed twice (orphan), with counts and
// samples; Repair fixes them, idempotently. An entity whose stored value no index key can
// hold (over the key limit, written around the index) is logged and skipped
// (Checkpoint.Skipped) rather than stopping its partition; Verify reports it as missing
// and Repair leaves it (TestBackfillSkipsUnindexableEntityVerifyReportsIt).
// Checkpoint.Written counts only the entities whose listing was written: a rerun over a
// complete index reports 0 (TestEventualBackfillRerunReportsNothingWritten). A failure
// stops a page or a repair without losing count: no other entity's write starts, the
// writes already running finish under the caller's context (a write whose client gave
// up may land all the same, so a sibling's failure cancels none), and
// Checkpoint.Written and Report.Repaired count every write confirmed, with the error too
// (TestSamePartitionBackfillPageStopsAtTheFirstFailure,
// TestSamePartitionRepairCountsEveryEntityItWrote).
//
// Verify and repair run as jobs too, one per partition: StartVerify and StartRepair
// enqueue them (kinds VerifyKind and RepairKind, handled by the same Register). A verify
// job writes nothing and logs one line, "index verify", on the table's logger
// (repo.Options.Logger): the partition, the counts and the samples as keys only (drift
// kind, the entity's PartitionKey and RowKey; never the value it is listed under). A
// repair job runs Repair and logs "index repair" with repaired set. Payloads are
// untrusted: an invalid PartitionKey (or, for Eventual, a TableStore's partition) or a
// resume point on a verify or repair job is cancelled into the poison queue before any
// request; a duplicated repair is harmless (TestVerifyRepairJobs). The archiver binary
// runs these jobs for a team's own indexes (app.MainWith in queueworker/cmd/archiver/app).
// A job costs what its call costs, plus 1 enqueue (and the worker's dequeue and
// delete) per partition, and for Start without partitions 1 query per partition listed.
//
// Consistency: option 2 backfills and repairs an entity with the live path's
// transaction, the entity rewritten conditional on its ETag (merged, so properties T does
// not declare stay: TestSamePartitionBackfillKeepsUndeclaredProperties) together with its value's
// index entity (and those of wrong values) conditional on theirs, retried from fresh
// reads on any conflict, so the application may keep writing; options 1 and 3 run
// Reconcile, the handler's own body (TestSamePartitionBackfillResumesVerifyRepairs:
// a backfill cancelled before random transactions resumes and completes, then injected
// drift is found and repaired; TestSamePartitionWindowBackfillCannotListAnOldValue: a
// backfill transaction held while a rename commits fails its condition and lists
// nothing stale; TestSamePartitionBackfillJobsDuplicatedReordered;
// TestEventualBackfillVerifyRepair). With a BlobStore, Verify reads only the lists of the
// values the partition's entities have: an orphan under a value none of them has is not
// seen (a TableStore's lists are all read).
//
// Cost: option 2, per entity 1 range query of its value's index entities and, when it is
// not listed, 1 transaction (the entity gets a new ETag); options 1 and 3, a Reconcile
// per entity with a value. Verify: 1 query per 1,000 entities, plus 1 range query of the
// index entities (option 2), a scan of the TableStore's partitions (option 3) or 1 list
// read per distinct value (option 1).
//
// Throughput: the service serves each partition (and each blob) at its own rate, so a
// backfill or repair bounds what it sends to what it writes. Its entities run on
// retry.Schedule, keyed by what each writes: option 2's, the partition itself (the
// entity and its index entity are in it); a backfill of options 1 and 3, the list of the
// entity's value (the TableStore's partition, the BlobStore's blob); a repair of options
// 1 and 3, whose lists are known only once an entity is read, one key for the whole
// repair. At most 2 entities run at once per key, so at most 2 writes are in flight in
// any partition or list (but for an entity whose value changed since its page was read,
// which writes its new value's list under its old one's key), each marked with it so that the client's Gate slows a busy one alone
// (TestSamePartitionBackfillSpreadsWritesOverPartitions: one hot department and six
// cold ones backfilled at once through a model of the partition targets, no partition
// with more than 2 requests in flight, the hot one refused, the cold ones done before it
// ends; TestEventualBackfillSpreadsWritesOverLists: the same for one hot list and six
// cold ones of one partition).
//
// # Archiving an indexed entity
//
// Both kinds are companions of the archive (package consistency: list the index under
// the table in consistency.Options.Companions, built on the Archiver's clients). An
// archive move of an entity then leaves its id listed nowhere; the entry is removed, not
// re-created for the archive table (an index lists the entities of its own table).
//
//   - SamePartition (option 2): Removal reads the value's index entities (one range query)
//     and the move removes the id from its page, If-Match the page's ETag (or deletes the
//     page with its last id), in the transaction that deletes the entity, as Delete does:
//     atomic. Another writer of the value changing the page meanwhile fails the
//     transaction and the move starts over
//     (TestArchiveSamePartitionRemovesTheEntryInTheDeleteTransaction,
//     TestArchiveSamePartitionWriterBetweenRemovalAndTransaction,
//     TestArchiveSamePartitionLostResponseAndTwoDeliveries).
//   - Eventual (options 1 and 3): the move follows Delete's protocol: a Change announcing
//     the entity deleted is enqueued before the delete, both within Settle/2, and the
//     handler unlists the key once it finds the entity gone
//     (TestArchiveEventualRemovesTheEntryThroughTheWorker,
//     TestArchiveEventualCrashBetweenBeforeAndDeleteThenTwoDeliveries,
//     TestArchiveEventualLostDeleteResponse).
//
// Archived rows are stored data: an entity that does not decode, a value no index key
// can hold, and an index entity archived as if it were an entity are refused with
// errs.ErrInvalidInput before anything is written or enqueued
// (TestArchiveSamePartitionUnreadableAndForgedEntities,
// TestArchiveEventualUnreadableEntity). Forged pages that list the id under its
// value more than once are all cleaned in the delete transaction
// (TestArchiveSamePartitionForgedPagesPointingAtTheEntity); so many that the
// transaction would exceed its limits are refused by the move before the archive copy
// is written (errs.ErrInvalidInput, permanent: the entity stays where it is, for an
// operator; TestArchiveSamePartitionForgedPagesOverflowTheTransaction).
//
// # Where the index entities live
//
// Option 2's index entities share their partition with the entities they index, as
// heterogeneous entity types (the design guide's "Work with heterogeneous entity types"):
// a query of the whole partition returns them too.
// Their RowKeys occupy SamePartition.KeyRange ("idx!<Name>!" ...), which entity RowKeys may
// not enter (Insert refuses them); leave the range out of partition queries, or use a
// codec.Registry to tell the types apart.
//
// Writes must go through the index (Insert, Update, Delete): a write through the table
// alone leaves the index behind, and for options 1 and 3 the handler only cleans the old
// values a message names.
//
// # Errors
//
// The sentinels these docs name (errs.ErrNotFound, errs.ErrPreconditionFailed,
// errs.ErrInvalidInput, ...) are those of package
// github.com/tablepatterns/tablepatterns/errs: test them with errors.Is.
package indexentity

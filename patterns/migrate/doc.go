// Package migrate re-keys and re-shapes a live table while the application writes: the
// zero-downtime migration the design guide leaves to the reader (DESIGN.md, "live
// migration"). A team declares the migration in Go (Spec: a source *repo.Table[O], a
// target *repo.Table[N], the same table or another, Keys mapping old keys to new ones,
// and a pure Transform from O to N) and the application writes and reads through it
// (Insert, Upsert, Update, Delete by old keys and the old type; Get by old keys, in the
// new shape) while an operator takes it through its stages (Plan, Advance, Abort), and
// workers run its background work (RunJob, Register).
//
// The algorithm: migrate.go
//
// # Stages and the state record
//
// One small entity per source table in a control table (Spec.Control, default
// "TpMigrations"; PartitionKey the source table's name in lower case, RowKey
// "migration") holds the migration's name, kind ("rekey" or "schema"), target, stage and
// previous stage; its Timestamp is the service's time of the last transition. Plan inserts it (If-None-Match:
// a second migration of one source table meets ErrInProgress; a record of an ended one
// is replaced If-Match), and every transition replaces it If-Match the ETag read, so two
// operators never both move it. Each write carries a fresh id and the record keeps the
// ids of its last eight writes, so a transition whose answer was lost is decided by
// evidence: it landed (even when another process moved the record on before the
// re-read, or another migration's Plan replaced the record it ended: the ids are read
// before anything else) or it did not
// (TestLostTransitionResponseOvertakenByAnotherIsDecidedByEvidence,
// TestLostEndingTransitionOvertakenByANewPlanIsDecidedByEvidence). Every process reads
// it back and validates it (a stage and predecessor that exist, a kind, this migration's
// name, kind and target) before acting: a migration owns the record only when both its
// name and its kind match.
//
// A migration that ended stays deployed while the next migration of its table runs, and
// its outcome must outlive its record: a Done migration keeps Done's rules (the new
// layout, the latest version), never Planned's. So Plan, replacing an ended record,
// moves its migration's outcome (name, kind, final stage) into the record's Ended list,
// which every write carries forward (the last eight outcomes, validated like the rest of
// the record); a migration whose record was replaced follows the final stage listed for
// it there, at once, and reads the record as that stage, or Planned's rules when it is
// not listed (TestSchemaWritesTheLatestOnceDoneEvenAfterAnotherMigrationOfTheTableEnded).
// Retire an ended migration from the code before eight more migrations of its table
// were planned.
//
//	Planned -> DualWrite -> Backfill -> Verify -> CutOver -> CleanUp -> Done
//	any of Planned..CutOver -> Aborting -> Aborted
//
// What each process does, by the stage whose rules it follows:
//
//	stage                     writes                                      reads (Get)
//	Planned, Aborted          old layout                                  old
//	DualWrite..Verify         old layout, then the copy (the copy rule)   old
//	CutOver                   old layout, then the copy                   copy when current, else old
//	CleanUp                   finish the entity, then the copy alone      copy when detached or current, else old
//	Done                      the copy alone                              copy
//	Aborting                  old layout, then remove the copy            old
//
// Until CleanUp every acknowledged write lands in the old layout first, so an abort finds
// the old layout complete and current. Background work: Backfill copies every old entity
// (the copy rule); Verify counts missing, stale and orphan copies by partition (counts
// and keys, never values: Report) and repairs each; CleanUp finishes every entity (its
// copy made current, marked detached, then the old entity deleted If-Match the version
// the copy holds, once the copy is found to hold that version's Transform) and every copy whose old entity is gone; Aborting deletes every copy.
// A range job (Job) selects whole partitions (PartitionKeyFrom, PartitionKeyTo) of
// the old layout or of the copies, and resumes after its checkpoint After, the last key
// it scanned: the selection, its validation and the checks of every key a scan returns
// (inside the range, ascending) are package patterns/internal/rangejob's, shared with
// the range archive. A page's entities go through the copy rule together, 100 at a time
// under one stage view (page.go): their copies read, THEN their old entities, each with
// one range query per partition, the copy writes of one new partition in entity group
// transactions, each write with its own condition (grouped.go), THEN the old entities
// read again the same way; what that cannot settle (a transaction refused, an old entity
// changed since, a chunk past its deadline:
// TestChunkPastItsDeadlineGoesThroughThePerEntityRule) goes through the per-entity rule,
// each entity under its own stage view and deadline, through retry.Schedule
// (Options.Concurrency at once, half of them at most in one partition, partitions in
// turn). The page scan
// settles an entity only when its copy, read after the scan, records exactly the version
// the scan saw, and the scan began once the job's stage had settled (a scan taken while
// writers could still follow the previous stage's rules may miss a write whose writer
// stopped before its copy step, so its chunk reads every old entity:
// TestCutOverOldWriteAfterAnEarlyCleanUpScanIsCopiedAndCleanUpFinishes,
// TestCutOverOldDeleteWithoutItsCopyStepAfterAnEarlyCleanUpScanNeverComesBack,
// TestBackfillOldWriteAfterAnEarlyVerifyScanIsCountedStaleAndCopied): nothing is
// written then (page.go says why that is safe;
// TestWriteBetweenPageScanAndCopyReadEndsCurrent,
// TestOldWriteWithoutItsCopyBetweenPageScanAndCopyReadIsRepairedByTheNextPasses,
// TestWriteAndDeleteBetweenCleanUpScanAndCopyReadAreKept). Clean-up detaches a new
// partition's copies and deletes an old partition's entities in entity group
// transactions, If-Match each one's version (a delete transaction refused: its entities
// one by one). Advance runs a stage's work to its
// end in the calling process before it moves on (an operator's program calls it;
// a team's archiver runs the jobs: Extensions.Migrations of package
// queueworker/cmd/archiver/app, `archiver enqueue migrate-* -migration NAME [-dry-run]`);
// workers (Register, Jobs, EnqueueJob) run the same range jobs in parallel beforehand, so
// Advance's own pass finds little left. The operator's archiver moves the stages too:
// `archiver migrate status|advance|abort -migration NAME`. An abort job acts only once
// the record says Aborting: one delivered before is cancelled into the poison queue,
// since the migration may never be aborted
// (TestAbortJobBeforeTheAbortIsCancelledNotSnoozed).
//
// # Staleness bound
//
// A process uses the record it read for at most Options.Refresh; every operation through
// the migration starts with such a view and runs under a deadline (WriteTimeout). After
// a transition at time T (the service's clock), a process follows the new stage's rules
// only from T + settle, settle = Refresh + WriteTimeout + 3 x ClockSkew; before that it
// follows the previous stage's rules under a deadline that ends by T + Refresh +
// WriteTimeout + ClockSkew (or, with less than a quarter of WriteTimeout left, waits
// until T + settle). A process still holding the previous view started its operation
// within Refresh of T and ends it within WriteTimeout. So operations under two stages'
// rules never overlap, and a stage's background work (which runs under the same rule)
// starts only when every process follows that stage. Each transition therefore costs
// settle of waiting in Advance and at most a quarter of WriteTimeout of delay for a
// write that would otherwise straddle it. The bound assumes a request is applied, if at
// all, before its deadline passes (plus ClockSkew).
//
// # The copy rule
//
// A copy (a row of the new layout) records the migration, the old keys and the old
// entity's version (ETag) it was made of (PropMigration, PropSourcePK, PropSourceRK,
// PropSourceETag, PropDetached). Making a copy current (converge) reads the copy, THEN
// the old entity: an old version other than the one the copy records is a newer one. The
// copy is inserted (none was there) or replaced If-Match the copy read; with the old
// entity gone, the copy is deleted If-Match. Then the old entity is read again: changed
// or gone since, the round starts over. A writer runs this after its own write; the
// backfill runs it for each entity; so whichever of them writes last, the copy ends at
// the last version, never replaced by an older one, and a deleted entity's copy never
// comes back (TestWriterBetweenBackfillReadAndCopyWriteNeverLeavesAnOlderCopy,
// TestDeleteBetweenBackfillReadAndCopyWriteNeverComesBack). A row at a copy's keys that
// is not this migration's copy of those old keys is refused (ErrInvalidInput), never
// replaced. A write's lost response, a conflict and ErrOutcomeUnknown all start a round
// over from fresh reads (TestLostResponsesOnCopiesAndCleanUpDeletesLoseNothing).
//
// Reads never step back and never miss (TestReaderThroughEveryTransitionSeesNoGapAndNoStepBack):
// at CutOver the copy is served only when it records the old entity's current version
// (a write between its two steps, or one that failed between them, is read from the old
// layout: TestOldWriteWithoutItsCopyIsStillReadAtCutOver); once CleanUp began, a
// detached copy is newer than anything left in the old layout, since no process writes
// the old layout any more; an old entity gone since its copy was read sends the read back
// to the copy (TestReadWhileCleanUpFinishesTheEntityNeverMisses). An ETag a Get returned before CleanUp (the old entity's) is
// accepted by one write after it began, and refused once the entity was written since
// (TestETagReadBeforeCleanUpRefusedOnceTheEntityChanged); an Update or Delete without an
// ETag never meets errs.ErrPreconditionFailed from another write
// (TestUnconditionalWritesOnceCleanUpBeganNeverMeetPreconditionFailed). No application
// write is sent without a condition: one the application made unconditional (an Upsert,
// an Update or a Delete without an ETag) is written If-Match the row read just before it
// (inserted where there was none), so its request, abandoned by a client that gave up
// and applied by the service after a newer write, is refused instead of putting the
// older version back (TestReaderNeverStepsBackWhenAnAbandonedWriteLandsLate;
// abandoned_write.go). An insert meets no condition: one abandoned before clean-up and
// applied once it began, behind a copy the application wrote since (a copy that stands
// alone), leaves an old entity the service stamped after that copy, which clean-up
// deletes instead of refusing the entity's writes and its own end
// (TestCleanUpEndsWhenAnAbandonedInsertLandsBehindADetachedCopy; late_old_write.go). A
// write applied between a copy's detach by clean-up and the old entity's delete is, at
// the service, a write of a process past every stage bound, one its writer may have
// seen acknowledged: it is kept, never deleted, and the entity's writes and clean-up
// are refused (ErrInvalidInput) for an operator to decide
// (TestAbandonedWriteLandingBetweenDetachAndDeleteIsKeptAndReported,
// TestOldWriteBetweenCleanUpDetachAndItsTransactionIsNeverDeleted).
// Applied after Done, it stays in the old layout, which nothing reads any more; applied
// onto a key deleted since, it undoes the delete (repo's doc).
//
// # Promises and the tests that prove them (against the server)
//
//   - no acknowledged write lost or duplicated, a deleted entity never back, the new
//     layout ending with exactly the latest version of each live entity and the old
//     layout empty, under a writer updating, inserting and deleting, a reader, and
//     worker processes killed with SIGKILL at random points
//     (TestMigrationUnderLoadWithKilledWorkersEndsWithExactlyTheLatest, 2,000 entities
//     over 20 partitions; 20,000 in make soak);
//   - a writer in the window between the backfill's reads and its copy write
//     (TestWriterBetweenBackfillReadAndCopyWriteNeverLeavesAnOlderCopy,
//     TestOldWriteWithoutItsCopyBetweenBackfillReadAndCopyWriteIsCopied,
//     TestDeleteBetweenBackfillReadAndCopyWriteNeverComesBack,
//     TestOldDeleteWithoutItsCopyStepBetweenBackfillReadAndCopyWriteNeverComesBack), or
//     between its copy write and its confirming re-read
//     (TestOldWriteWithoutItsCopyBetweenCopyWriteAndConfirmingReadIsCopied,
//     TestOldDeleteWithoutItsCopyStepBetweenCopyWriteAndConfirmingReadNeverComesBack), and
//     an application delete or write in clean-up's window between its reads and its copy
//     write (TestDeleteWhileCleanUpFinishesTheEntityNeverComesBack,
//     TestWriteWhileCleanUpFinishesTheEntityIsKept);
//   - transitions: two from one record at once move it once
//     (TestTwoTransitionsFromOneRecordMoveItOnce), and an abort landing inside Advance's
//     verify pass wins (TestAbortDuringAdvancesVerifyPassWinsAndLeavesTheOldLayout);
//   - lost responses on copy writes and deletes, the old layout's deletes and the state
//     transitions (TestLostResponsesOnCopiesAndCleanUpDeletesLoseNothing);
//   - two deliveries of one backfill job at once (TestTwoDeliveriesOfOneBackfillJobAtOnce);
//   - abort at each stage before CleanUp leaves the old layout complete and current and
//     no copy (TestAbortAtEachStageLeavesTheOldLayoutCompleteAndCurrent, in process;
//     TestAbortAtEachStageUnderLoadWithKilledWorkersLeavesTheOldLayout, from DualWrite,
//     Backfill, Verify and CutOver under a writer and a reader while SIGKILLed worker
//     processes run the stage's range jobs and the abort's, each over several pages;
//     TestAbortRefusedOnceCleanUpBegan);
//   - planning refuses colliding keys, a second migration of one table is refused, and
//     forged records, jobs and rows are refused (TestPlanRefusesTwoOldKeysOnOneNewKey,
//     TestPlanRefusesNewKeysOnOldKeysInOneTable, TestSecondMigrationOfOneTableRefused,
//     TestForgedStateRecordRefused, TestForgedJobsRefusedBeforeAnyRequest,
//     TestJobCheckpointOutsideItsRangeRefusedBeforeAnyRequest,
//     TestForeignRowAtCopyKeysRefusedNotReplaced; a row claiming to be a detached copy
//     before clean-up began, or of a version the old entity does not hold, or of the old
//     entity's real version with other values, or with a value stored as another type
//     than the migration writes (clean-up deletes an old entity only behind a copy that
//     holds its Transform: detached_copy.go), is refused and never read before clean-up
//     nor lets clean-up delete the old entity:
//     TestForgedDetachedCopyBeforeCleanUpRefusedNeverRead,
//     TestForgedDetachedCopyAtCleanUpNeverDeletesTheOldEntity,
//     TestForgedDetachedCopyWithTheRealETagNeverDeletesTheOldEntity,
//     TestDetachedCopyOfAnotherPropertyTypeNeverDeletesTheOldEntity).
//
// # Planning
//
// Plan scans every key of the old layout and computes its new key: two old keys mapping
// to one, or (in one table) a new key that is the key of an old entity, are refused
// before anything is written. Cost: one scan of the source's keys and a map of two keys
// per entity in memory. Keys must be a pure function of the old keys, and in a same-table
// migration its image must stay out of the old key space for keys written later too (a
// prefix the old keys never have): a write at an old key where a copy sits is refused
// and never replaces nor deletes the copy, since a write the application made
// unconditional (Upsert, Update or Delete without an ETag) reads the row first and
// writes If-Match it (TestWriteAtAnOldKeyWhereACopySitsRefused).
//
// # Schema evolution without a key change (schema.go, schema_stages.go, schema_jobs.go, schema_abandoned_write.go)
//
// Schema covers the other half of a migration: the keys stay, the shape changes. Every
// entity carries its version in a property (SchemaSpec.VersionProperty, absent =
// version 1) and SchemaSpec.Upgrades holds one upgrade per version (v1 -> v2 -> v3) on
// the dynamic entity. Get reads any version and returns the latest shape (lazy upgrade;
// with SchemaOptions.WriteBack the upgrade is written back If-Match the ETag read)
// (TestLazyUpgradeReadsEveryVersionAsTheLatest). A version it does not know (newer code
// wrote it, or forged) is refused on read and left by every rewrite
// (TestUnknownSchemaVersionRefusedNotRead, TestForgedSchemaVersionsRefusedAndLeftByEveryJob).
// Without SchemaSpec.Name it has no stages: writes are at the latest version and
// Rewrite (one page, resumable by its checkpoint) and RewriteAll upgrade every older
// entity (TestSchemaRewriteUnderWritesLostResponsesAndTwoRunsLosesNoWrite). It promises
// no reader ordering beyond a plain table's, but its writes take the staged path below:
// a write the application made unconditional reads the entity first and is sent
// If-Match it, so an abandoned request never puts an older value back there either
// (TestSchemaReaderNeverStepsBackWhenAnAbandonedWriteLandsLate, "no stages"), for one
// more request per such write.
//
// With SchemaSpec.Name the evolution goes through the stages, the state record and the
// staleness bound of a re-keying migration: it is the table's migration (its record is
// the one a re-keying of the table would use, so a re-keying and a schema migration of
// one table at once are refused: ErrInProgress; migrations are told apart by name and
// kind, so a schema migration never moves a re-keying's record of the same name:
// TestSchemaAndReKeyingMigrationsOfOneTableRefusedAtOnceUnderOneName), Plan, Advance, Abort, Status and WaitSettled take it through
// them, and its range jobs (KindSchemaRewrite, KindSchemaVerify, KindSchemaDowngrade:
// Jobs, EnqueueJob, Register, RunJob, RunAll) run as the re-keying ones do: pages after
// a checkpoint, checked by package rangejob, retry.Schedule, one page per delivery and
// its continuation enqueued. The migration goes from the version before the latest
// (from) to the latest. Reads always return the latest shape; the stage decides the
// version a process writes (before Plan, Planned's rules apply):
//
//	stage                        writes (Upsert, Update, Insert)  background work
//	Planned, DualWrite, Aborted  from (the latest shape downgraded)
//	Backfill                     the latest                       rewrite: every older entity upgraded
//	Verify                       the latest                       count every entity below the latest, upgrade it
//	CutOver, CleanUp, Done       the latest                       none: nothing of the old shape is left to serve
//	Aborting                     from                             downgrade: every latest entity back to from
//
// Until Backfill has settled, every process of a rolling deploy, including those still
// running the code of version from, reads what is written; only from Backfill on does a
// process write the latest, and a lazy upgrade is written back only then
// (TestLazyWriteBackOnlyOnceProcessesWriteTheLatest). A delete writes no version and
// needs no stage. The rewrite
// and the downgrade replace an entity If-Match the ETag read and re-read on a conflict,
// so a writer's newer write is never replaced by the upgrade (or downgrade) of an older
// version and a deleted entity never comes back
// (TestWriterBetweenSchemaRewriteReadAndWriteIsNeverReplacedByAnOlderUpgrade,
// TestWriterBetweenSchemaDowngradeReadAndWriteIsNeverReplacedByAnOlderDowngrade); a lost
// response is decided by the re-read
// (TestLostResponsesOnSchemaRewritesDowngradesAndTransitionsLoseNothing), two deliveries
// of one job write each upgrade once (TestTwoDeliveriesOfOneSchemaRewriteJobAtOnce).
// Verify reports the entities below the latest version by partition and keys, never
// values (SchemaReport; TestVerifyCountsEntitiesBelowTheLatestVersionByPartitionAndUpgradesThem).
// Abort needs SchemaSpec.Downgrades (one per upgrade; only the last is used): without
// them a process writes the latest from Planned on, and Abort is refused before any
// request (TestSchemaAbortWithoutDowngradesRefusedBeforeAnyRequest). Forged jobs are
// refused before any request (TestForgedSchemaJobsRefusedBeforeAnyRequest). A downgrade
// job acts only once the record says Aborting, as a re-keying's abort job: delivered
// before it is cancelled into the poison queue, after Aborted dropped
// (TestSchemaDowngradeJobBeforeTheAbortIsCancelledNotSnoozed). An entity that an upgrade
// or downgrade refuses is left and reported by its keys (SchemaReport.Refused,
// RefusedKeys; never values), and Advance does not record the next stage while its own
// pass of the stage's work left one (ErrStageIncomplete, *IncompleteError:
// schema_refused.go), so CutOver is never reached with an entity below the latest and
// Aborted never with one at it (TestSchemaCutOverNeverReachedWithAnEntityBelowTheLatest,
// TestSchemaAbortNeverEndsWithAnEntityAtTheLatestVersion); an entity of a version the code
// does not know is not the migration's to convert and does not hold Advance back.
//
// Promises, against the server: under a writer updating, inserting and deleting, a
// reader, and worker processes killed with SIGKILL at random points, every live entity
// ends at the latest version with exactly its latest value, none that was deleted comes
// back, and the reader sees no gap and no step back
// (TestSchemaMigrationUnderLoadWithKilledWorkersEndsWithExactlyTheLatest, 2,000 entities
// over 20 partitions; 20,000 in make soak); an abort at each stage before CleanUp leaves
// every live entity at version from with its latest value
// (TestSchemaAbortAtEachStageLeavesEveryEntityAtTheFromVersion, in process, also
// refused once CleanUp began; TestSchemaAbortDuringRewriteUnderLoadWithKilledWorkersLeavesTheFromVersion,
// while SIGKILLed worker processes rewrite and downgrade). A request whose client gave
// up can still be applied by the service after the application's newer, acknowledged
// write (a loaded store; Azurite does so to a request it received on a connection it
// had not read yet). So Schema sends none of the application's writes without a
// condition: an Upsert, or an Update or Delete without an ETag, reads the entity first
// and is sent If-Match the ETag read, or inserted where there was none; on 412, 409 or
// 404 an Upsert reads again (it never returns ErrPreconditionFailed). Applied late, the
// abandoned request meets a row that changed since and is refused: the reader never
// reads the older value after the newer one
// (TestSchemaReaderNeverStepsBackWhenAnAbandonedWriteLandsLate, at DualWrite, CutOver,
// Done and without stages), a from-version write sent before Backfill never lands
// below the latest after the rewrite
// (TestSchemaAbandonedWriteLandingAfterTheRewriteLeavesNoEntityBelowTheLatest), and a
// latest-version write never lands at the latest after the downgrade
// (TestSchemaAbandonedWriteLandingAfterTheDowngradeLeavesNoEntityAtTheLatest). An
// insert carries only If-None-Match: one abandoned where the entity was absent, and
// applied late while it is still absent (nothing written it since), stores the version
// of the stage it was sent in; reads return it in the latest shape, and the next write
// of it stores the version of the stage it is made in.
//
// # Progress (progress.go)
//
// Each page a range job completes, on a worker's delivery or in RunAll (Advance),
// records its progress in the control table, beside the state record: one row per
// range job of the stage's run, keyed by the migration, the id of the transition that
// entered the stage (a re-run after an abort, or a later stage, is another run), the job
// kind and the range; it holds the furthest checkpoint reached, whether the range is
// done, and the counts (scanned, and the kind's own: copied, missing, stale, orphans,
// foreign; rewritten, current, unknown, downgraded, refused): counts and keys, never
// values (TestProgressRowsNeverHoldAValue). Only the write that moves the stored
// checkpoint past where it was adds the page's counts, If-Match the row read (an insert
// where none is), and only from a page that starts at or past it; a page whose
// checkpoint is not past it adds nothing, nor does one that starts before it (its counts
// hold rows counted already: the delivery that counted them goes on from the stored
// checkpoint and counts the rest), and a write that meets 412 or 409 reads again; one
// whose answer is lost is not retried (it was applied, or its counts are missing) and
// the next page's write reads the row again. So a page counts once under two
// deliveries at once (TestProgressCountsAPageOnceUnderTwoDeliveriesAtOnce), two deliveries that end their
// pages at other keys (a worker of another PageSize, a service page that ended early:
// TestProgressCountsAPageOnceWhenDeliveriesEndItAtOtherKeys), a lost response
// (TestProgressCountsAPageOnceWhenItsWriteLosesItsResponse), and a worker killed between
// the page's work and its progress write, whose redelivery counts it
// (TestProgressOfAPageWhoseWorkerWasKilledIsCountedOnceByTheRedelivery); the sums equal
// the Report of a RunAll of the stage (TestProgressSumsEqualTheReportOfRunAll).
// Migration.Progress and Schema.Progress sum the current stage's rows (its run's alone:
// none before its first page, none at Aborted or Done, the abort job's at Aborting:
// TestProgressShowsTheCurrentStagesRunAlone) per pass of a job kind (ranges started and
// done, the total Jobs split the pass into, the counts): the
// workers' jobs and Advance's own RunAll over the same work keep rows apart and are
// summed apart, so neither counts an entity twice
// (TestProgressKeepsAdvancesPassApartFromTheWorkers), and so do two splits of the work
// into as many parts at other bounds: a range joins a pass none of whose ranges it
// overlaps (TestProgressKeepsTwoSplitsOfOneCountApart), skipping and counting a row that
// does not validate (TestProgressSkipsARowThatDoesNotParse), among them one of a kind
// that no job of the run writes (TestProgressSkipsARowOfAKindNotOfItsRun) and those that
// would take a sum past the largest count or start a pass past 64 of a kind
// (TestProgressSumsNeverOverflow, TestProgressBoundsThePassesOfOverlappingRanges);
// `archiver migrate status` prints them. Progress is advisory: a progress write that
// fails is logged as a warning and never fails the page, whose counts are then missing
// from the sums; it is sent once, never retried, so that a throttled or failing control
// table never holds the pages (and Advance's RunAll) for the sake of a count
// (TestAProgressWriteTheServiceRefusesIsTriedOnceAndNeverFailsThePage). The rest of a
// page that began before rows counted already is missing too when the delivery that
// counted them stopped for good (its redelivery paged the range at other keys): the
// sums may fall short, never count a row twice. It costs one read and one write of the
// control table per page (more only when two deliveries of a page meet).
//
// # Cost
//
// Per application write during DualWrite..CutOver: the old write, two reads of the copy
// and the old entity, one copy write, and one more read of the old entity (five
// requests; a copy that is already current costs three); a write the application made
// unconditional reads the old entity first, one more (two requests before DualWrite).
// Once clean-up began a write reads the copy, then writes it If-Match what it read (at
// CleanUp, after finishing the entity). A read costs one request before
// CutOver, two at CutOver and CleanUp, one at Done. A range job's chunk of 100 reads the
// copies with a request per new partition among them (a range query, or a point read
// for a lone copy), the old entities (and their confirming re-read) with one per old
// partition, and writes the copies (inserts, replaces, detaches) in a transaction per
// new partition and deletes the old entities in one per old partition; before those
// deletes, clean-up reads the copies and the old entities whole once more (a request per
// partition each), since a copy must hold the Transform of the version it records
// (holdTransforms in detached_copy.go). So its cost per
// entity depends on how the new keys spread a chunk's copies, on copies written once:
//   - copies grouped by partition (many old entities to one new partition, as the old
//     layout groups them): about 0.1 requests per entity for backfill, verify and
//     clean-up each, 0.2 at most, a page's progress row included
//     (TestRangeJobsSendUnderAFifthOfARequestPerEntity, BENCHMARKS.md);
//   - copies spread one per partition (each old entity to a new partition of its own):
//     nothing is shared on the new side, so each copy costs a point read and each copy
//     write (backfill's insert, clean-up's detach) a request of its own: about 2
//     requests per entity for backfill, 1 for verify, 3 for clean-up (its check's read
//     of the copy), and 2.2, 1.1 and 3.3 at most
//     (TestRangeJobsSendAboutTwoRequestsPerEntityWhenEachCopyHasItsOwnPartition).
//
// An entity the chunk cannot settle costs what the per-entity rule costs (four to seven
// requests). Every range job scans 1,000 keys per query.
// A Schema write the application made unconditional (Upsert, Update or Delete without an
// ETag) reads the entity first: two requests where a plain table sends one, with or
// without stages (an Insert, or an Update or Delete with an ETag: one). A staged schema
// migration costs no other request per application write or read beyond the state
// record's read once per Refresh; its rewrite and downgrade one replace per entity they
// change (pages of whole entities, SchemaOptions.PageSize).
//
// # Errors
//
// The sentinels (errs.ErrNotFound, errs.ErrPreconditionFailed, errs.ErrInvalidInput,
// errs.ErrOutcomeUnknown, ...) are those of package
// github.com/tablepatterns/tablepatterns/errs: test them with errors.Is.
package migrate

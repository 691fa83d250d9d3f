// Package denormalize implements the denormalization pattern of the Azure Table storage
// design guide ("Table design patterns": "Denormalization pattern"): copies of related
// data kept inside the entity that is read, and kept consistent with their source.
//
// The algorithm: denormalize.go
//
// That file holds the writes in the guide's terms: a target written with a fresh copy of
// its source, a source written with its copies. Beside it, write.go holds the API and its
// retries, requests.go every request the writes send, worker.go the reconciliation of
// AcrossPartitions mode, links.go the link rows that say where a source is copied,
// outcome.go the decision after an unknown outcome, telemetry.go the spans and seams.go
// the one test seam.
//
// # The problem
//
// Normalized data costs round trips. With a department entity that holds its manager's
// employee id, showing a department with its manager's name and phone takes two point
// queries: the department, then the manager's employee entity.
//
// # The solution
//
// Keep a copy of the manager's details in the department entity, so that one point query
// returns everything (the guide's "denormalized, combined department entity"). The price
// is a little storage and the duty the guide names: keep the two copies of the manager's
// details consistent.
//
// A Relation[S, D] ties a source type S (the manager's Employee) to a target type D (the
// Department). ref tells which source a target copies; copy writes the source's details
// into the target. Both are required, so they are arguments of the constructor, which
// also picks the mode; options come last, by pointer (nil = the documented defaults), and
// the logger is the sources table's:
//
//	rel, _ := denormalize.New(emps, depts, "Manager", managerOf, copyManager, nil)             // InPartition
//	rel, _ := denormalize.NewAcross(emps, depts, "Manager", managerOf, copyManager, queue, nil) // AcrossPartitions
//
// The Relation then offers:
//
//   - UpdateSource: write a source and its copies together;
//   - PutTarget: write a target with a fresh copy of its source (assigning a manager);
//   - DeleteTarget;
//   - Copies: where a source is copied (the departments a person manages).
//
// Copies are found through link rows kept in the source's partition (RowKeys
// "link!<name>!<source RowKey>!<target PartitionKey>!<target RowKey>"), read with one
// range query; no scan for "Manager eq X" is ever needed. Links are stored data anyone with
// write access can forge: a link to a key no target can have is skipped, so it cannot
// block its source's writes and refreshes (TestForgedLinkDoesNotBlockTheSource).
//
// # Consistency: two modes
//
// Each promise of order or atomicity below names, in parentheses, the test that holds it
// at its narrowest window: most hold one request at a fault proxy (a pause) while the
// competing operation runs to completion, so the interleaving is exact.
//
// InPartition (New; the guide's layout: the department entity and its manager's employee
// entity in the same partition). Every write is one entity group transaction, so sources
// and copies change together or not at all: UpdateSource updates the source, every copy
// (each conditional on the ETag read) and the source's link header; PutTarget writes the
// target, its link and the header. The header (RowKey "link!<Name>!<source RowKey>")
// counts the source's copies and is written, conditional on its ETag, by every write that
// concerns the source (TestInPartitionGuideFlow, TestInPartitionETagsAndFaults), and
// PutTarget reads it before it reads the source: an UpdateSource
// that commits after that read makes PutTarget's transaction fail, one that committed
// before it is seen by the source read. An UpdateSource and a PutTarget that race for one
// source therefore conflict, and the loser reads again and starts over (with the
// jittered backoff of package retry), so no copy is ever left stale by a race
// (TestInPartitionPutRacesWithUpdateSource, TestInPartitionConcurrentWriters;
// TestInPartitionWindowPutTargetRacesUpdateSource holds each request of PutTarget in
// turn while an UpdateSource commits; TestInPartitionWindowUpdateSourceRacesPutTarget
// holds UpdateSource's transaction while a PutTarget links a new copy). (UpdateSource
// inserts the header of a source that has none yet, so every source updated through a
// Relation keeps one small header row.) Because one transaction holds 100 actions, a
// source may have at most MaxInPartitionCopies (98) copies in its partition; linking one
// more is refused with errs.ErrInvalidInput (TestInPartitionLimits).
//
// On a store that cannot delete a key holding U+2028 or U+2029 inside a transaction
// (Azurite; see package tabletest) the delete of a target or link whose key holds one
// goes in a request of its own right after the transaction (repo.SubmitOrSplit): there,
// and only there, readers may see the transaction's writes before that delete, and a
// process that stops between the two leaves it (and the header counting one copy too
// few). The service never takes that path
// (TestInPartitionLinksGoWhenKeysHaveLineSeparator).
//
// AcrossPartitions (NewAcross; targets in other partitions or tables). No transaction spans them, so
// copies are eventually consistent, with the message-first discipline of the eventually
// consistent transactions pattern: a write enqueues a message (SourceChange, TargetChange)
// (kinds "denormalize.source.<name>" and "denormalize.target.<name>", which Register takes:
// TestRegisterTakesTheRelationsKindsOnly) and then writes the entity (the Settle/2 protocol, shared
// with patterns/indexentity): one deadline, Settle/2 from the moment before the message
// is built, bounding both: the handler waits for the write until the message is Settle
// old by its EnqueuedAt, stamped after that moment, so a slow enqueue can never let the
// write land after the handler gave up (TestAcrossWindowSlowEnqueueCannotOutliveSettle), and
// a handler measures the message's age from before its reads
// (TestAcrossSettleIsMeasuredAfterTheReads).
// EnqueuedAt is untrusted (the envelope is whoever enqueued's): it is clamped to the
// queue's InsertionTime, so a forged future stamp cannot keep a message snoozing
// (TestHandlersClampForgedEnqueuedAt).
// UpdateSource enqueues its message even for a source without copies. A queueworker
// handler (Register) then
// reconciles by re-reading: RefreshSource reads the source and its links and rewrites
// every copy that differs; ReconcileTarget reads the target, upserts its link, deletes the
// links of the sources it no longer copies (named by the message), refreshes its copy,
// and reads the target again, starting over if it changed. Handlers trust only the keys
// of a message, so duplicated, reordered and replayed messages, concurrent handlers and a
// stop at any point converge to the same state (TestAcrossGuideFlow,
// TestAcrossMessagesDuplicatedReorderedReplayed,
// TestAcrossMessagesReplayedNewestFirstAndForgedConverge, TestAcrossCrashBetweenSteps,
// TestAcrossConcurrentWriters, TestAcrossFaults). A handler that finds the announced write not yet visible
// snoozes the message until it is Settle old, so a stop between enqueue and write ends
// with the message settling and changing nothing (TestAcrossHandlersSettle). Links are
// written by ReconcileTarget only, and a target links itself before it copies, so a
// source update either finds the link or the target's own reconciliation copies the new
// details: the update's message is handled after its write, whatever the links were when
// it began (TestAcrossWindowTargetLinkedDuringUpdateSource holds UpdateSource's write
// while a new target is linked and copied from the old source).
//
// Writes through repo may answer errs.ErrOutcomeUnknown when a retry after a lost response
// meets a conflict. The handlers derive what they write from fresh reads, so they read and
// decide again. PutTarget, DeleteTarget and UpdateSource read the entity they wrote again
// and decide with retry.Decide: still at the version read before the write, nothing landed
// and they start over; otherwise they return the errs.ErrOutcomeUnknown error, never
// success and never "nothing written": a target or source found, gone or changed may be
// another writer's doing after this call's write landed, and writing again would undo it
// (TestDeleteTargetNeverDeletesATargetPutAgainByAnotherWriter,
// TestPutTargetNeverReinsertsATargetDeletedByAnotherWriter,
// TestUpdateSourceNeverOverwritesAnotherWritersUpdate,
// TestDeleteTargetOutcomeUnknownIsRedecided,
// TestDeleteTargetConditionalUnknownThenPutAgainIsUnknown,
// TestUpdateSourceUnknownThenDeletedIsUnknown). Turn on repo.Options.TrackWrites to have
// repo recognise its own inserts and updates exactly.
//
// Deleting a source is the application's decision (reassign or delete its targets first;
// Copies lists them): the Relation does not delete sources.
//
// # Cost in requests
//
// A read of a target with its copy: 1 point query (instead of 2 normalized).
//
// InPartition: UpdateSource 2 + n (read the source, one range query of its header and
// links, n point reads of its copies in parallel) and 1 transaction; PutTarget 3 (the
// target, the source's links, the source) and 1 transaction, 1 more read when the target
// changes source; DeleteTarget 2 and 1 transaction.
//
// AcrossPartitions: UpdateSource 1 read, 1 enqueue (always: a target may link the source
// while it writes) and 1 write; PutTarget 2 reads, 1 enqueue, 1 write; DeleteTarget 1
// read, 1 enqueue, 1 delete. The worker: RefreshSource 3 reads + 2 per copy (read, write if it differs);
// ReconcileTarget 3 reads and 1 to 3 writes.
//
// # Where the link rows live
//
// Link rows share the sources' partitions, as heterogeneous entity types (the design
// guide's "Work with heterogeneous entity types"): a
// query of a whole source partition returns them too. They occupy Relation.KeyRange, which
// source (and, in InPartition mode, target) RowKeys may not enter; the Relation refuses
// such keys.
//
// # Telemetry
//
// Every write and reconciliation runs in a span named for it, "denormalize.<operation>",
// with the table and the relation's name; across partitions, a write and the
// reconciliation its message leads to share one trace (TestAcrossSpans).
//
// # Errors
//
// The sentinels these docs name (errs.ErrNotFound, errs.ErrPreconditionFailed,
// errs.ErrInvalidInput, ...) are those of package
// github.com/tablepatterns/tablepatterns/errs: test them with errors.Is.
package denormalize

// Package consistency implements the guide's eventually consistent transactions
// (seeds/004 "eventually consistent transactions pattern"; seeds/000, same pattern) for
// the archive jobs every Table storage application ends up needing, and the hot/cold
// separation of Tablestore (seeds/001: old data moved out of the hot tables whole).
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
//  1. read the entity from the source (and keep its ETag);
//  2. insert-or-replace it into the target (a table, or a blob);
//  3. delete it from the source, conditional on the ETag read in step 1;
//  4. delete the message (the worker does, once the handler returned).
//
// A message is delivered at least once, so each step must give the same final state when
// it runs twice, runs concurrently with itself, or runs again after a stop anywhere:
//
//   - stopped after 2: the rerun copies the same entity again and deletes the source;
//   - stopped after 3: the rerun finds no source and the entity in the target:
//     OutcomeAlreadyArchived, success;
//   - two deliveries at once: both copy the same entity; one delete wins, the other finds
//     the entity gone, which is success;
//   - the source changed between 1 and 3 (the application updated the employee): the
//     conditional delete fails, and the move starts over from a fresh read, so the target
//     never keeps a stale copy while the new version is deleted.
//
// Neither source nor target holding the entity is OutcomeMissing: nothing to archive. The
// worker handler moves such a message to the poison queue (queueworker.Cancel) for an
// operator to look at, rather than retrying it.
//
// Table jobs (ArchiveTable, RestoreTable) apply the same discipline to whole tables:
// export every entity to a gzip JSON-lines blob, verify the blob against what was read,
// write the manifest last (it is the commit point), and only then delete the table. A
// rerun after a stop re-exports (the table is still there) or finds the manifest and no
// table (already archived). Restore verifies the checksum before it writes anything and
// writes with idempotent upserts.
//
// # Consistency and cost
//
// Eventual: between the enqueue and the worker's run, the entity is still in Current only;
// between steps 2 and 3 it is briefly in both. Readers that must see one copy read the
// Archive after the Current (or check both). An entity move costs one message, one read,
// one write, one delete, and a message delete (five requests; six when the target is a
// blob and the source is already gone). A table export reads the table once to export it
// and once more to recount it, writes two blobs, reads the data blob back to verify it,
// and deletes the table with one request.
//
// # Data fidelity
//
// Table exports store each entity as codec writes it, with the EDM type of every
// property, and read the table with full metadata. Against Azurite a whole-valued
// Edm.Double (3.0) cannot be told from an Edm.Int32 (Azurite annotates no doubles, and
// aztables rewrites 3.0 as 3), so it is restored as Edm.Int32; the real service annotates
// doubles under full metadata and keeps them.
package consistency

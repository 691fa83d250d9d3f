// Package largeentity implements the large entities pattern of the Azure Table storage
// design guide ("Large entities pattern"): properties too large for an entity live in Blob storage, and the entity keeps
// a reference to them.
//
// The algorithm: largeentity.go
//
// That file holds the guide's steps in order (a blob under a fresh name, the entity that
// points to it, the deletion of the blob it replaced) and the sweeper. What hardens them
// sits beside it: outcome.go decides a write or delete whose answer was lost or refused,
// forged.go treats stored references as untrusted, metadata.go ties a blob to its entity,
// blobio.go holds the blob requests, write.go and delete.go the API and its validation.
//
// # The problem
//
// An entity holds at most 1 MiB in all, and one Edm.String or Edm.Binary property at most
// 64 KiB. An employee with a photo of a few hundred kilobytes does not fit.
//
// # The solution
//
// Store the large value in a blob and its address in a property of the entity — the
// guide's example is the employee's Photo property pointing to the photo in Blob storage.
// Here a property of type Blob does that: the Store uploads its content to a blob, and
// the entity keeps the blob's name with the content's size, SHA-256 and content type
// (so a reader can verify what it downloads and size a buffer before it does). Content up
// to Options.InlineLimit (16 KiB by default) stays inside the entity, which saves a
// request per read (TestInsertGetLoadOpen; the stored reference: TestBlobText).
//
//	photos, err := largeentity.New(employees, clients.Blobs, "employee-photos", nil)
//	e := &Employee{Department: "Sales", EmployeeID: "000123", Name: "Don Hall",
//		Photo: largeentity.NewBlob(jpeg, "image/jpeg")}
//	err = photos.Insert(ctx, e)                                  // blob, then entity
//	got, err := photos.Get(ctx, "Sales", "000123", nil)         // entity only
//	err = photos.Load(ctx, &got)                                 // parts on demand
//	got, err = photos.Get(ctx, "Sales", "000123", &largeentity.GetOptions{Eager: true})
//
// # Consistency: the entity never points to a missing blob
//
// An entity and a blob cannot change in one transaction; the guide suggests the eventually
// consistent transactions pattern. The Store orders its steps so that every crash leaves
// at worst an unreferenced blob (an orphan), never a reference to a missing one:
//
//  1. upload the new content to a blob under a fresh name (never used before, so no entity
//     references it and a retry may store it again);
//  2. write the entity, conditional on the ETag it had when the write read it, so the
//     write knows exactly which blobs it replaces;
//  3. delete the blobs the entity referenced before and no longer does.
//
// A stop after step 1 leaves a new orphan; after step 2, old orphans. Nothing is lost: the
// entity always holds either the old references (old blobs intact) or the new ones (new
// blobs complete). Delete removes the entity first and its blobs after
// (TestCrashBetweenSteps, TestFaultAtAnyStepLeavesTheEntityConsistent,
// TestUpdateReplacesAndDeletesOldBlob, TestDelete).
//
// A write never deletes a blob after an outcome it cannot prove; the sweeper reclaims
// what it leaves. The new blob names are fresh and random, so they double as a per-write
// id (the exact recognition of one's own write that repo.Options.TrackWrites gives plain
// tables): an entity referencing one proves that the write landed. After a refusal (a
// conflict, a precondition: possibly the echo of the write's own earlier attempt whose
// answer was lost) or errs.ErrOutcomeUnknown, a write that uploaded blobs reads the
// entity again. If it references a new blob and holds exactly what was sent, the write
// succeeded; if it references one but changed since, the blobs are kept and the error
// wraps errs.ErrOutcomeUnknown (read the entity and decide). If it references none, a
// plain refusal deletes the new blobs at once (every Store write is conditional on what
// it read, so no entity will ever reference them), while after errs.ErrOutcomeUnknown, a
// timeout or exhausted retries an attempt may still land, so they are left to the
// sweeper (TestUpdateLostResponseThenOtherWriterKeepsPhoto, TestRefusedUpdateDeletesItsNewBlob).
// A write without new blobs has no such id and returns the SDK's answer as is.
// Delete, after an outcome it cannot tell, reads again and decides with retry.Decide: the
// entity still at the version it read starts the delete over; gone, its blobs are deleted
// and the answer is errs.ErrOutcomeUnknown (another writer may have deleted it); another
// version (perhaps re-created by another writer after this delete landed) is left alone,
// with its blobs, and the answer is errs.ErrOutcomeUnknown
// (TestDeleteLostResponse, TestDeleteNeverDeletesAnEntityReinsertedByAnotherWriter).
//
// # Stored references are untrusted
//
// In a multi-tenant application a user may be able to write his own row (the guide's
// shared access signatures scoped to a key range). The Store therefore treats every
// reference it reads as untrusted input: an out-of-line part must name a blob this Store
// generates for that entity and property (its prefix, the hash of the entity's keys, the
// property, a timestamp and 96 random bits, nothing else) and record a plausible size.
// Any other reference — a foreign blob, another entity's blob, a path with "..", a
// suffix — fails Get, Load, Update, Upsert and Delete with ErrTampered before any blob
// request, so a forged reference can neither read nor delete the blob it names. Open
// streams only a Blob that a Store read vouched for, and checks the blob's Content-Length
// against the recorded size before it returns a reader; Load and an eager Get check it
// before they allocate anything. A tampered entity can still be removed with
// Store.Table().Delete (its own blobs are then orphans for the sweeper)
// (TestForgedReferenceIsRefusedWithoutTouchingTheBlob, TestForgedReferencePathsAreRefused,
// TestForgedReferenceSizesAtTheEdgesAreRefused, TestHugeSizeInReference,
// TestOpenRefusesAnotherStoresBlob).
//
// A part that carries no new content keeps what the entity holds for that property at
// the time of the write, never a reference read earlier (its blob may already have been
// replaced and deleted by another writer): that is why Update and Upsert read the entity
// first (TestUpsertKeepsCurrentPart, TestConcurrentUpserts).
//
// A reader may still meet a missing blob: it read the entity, then a writer replaced the
// part and deleted the old blob. Load tells this from a real dangling reference by reading
// the entity again, and an eager Get simply re-reads (TestStaleLoadAndDangling).
//
// # The sweeper and its race
//
// Sweep lists the Store's blobs and deletes those whose entity does not reference them.
// The race: a write has uploaded blob B (step 1) and not yet written its entity (step 2);
// a sweeper reading the entity now sees B unreferenced. Deleting B would leave the entity,
// once written, pointing to nothing. So the sweeper only judges blobs older than
// Options.SweepGrace (1 hour by default), measured from the blob's creation by the
// service's own clock (the listing's Date header, so the sweeper's clock does not matter),
// and reads the entity only after listing; and every write sends its entity write within
// Options.MaxWriteTime (5 minutes by default) of starting its first upload, or gives up
// and leaves its blobs to the sweeper. SweepGrace must be at least twice MaxWriteTime:
// the margin covers a request in flight at the deadline and clock drift. A blob is deleted
// only if its ETag is still the listed one, and only by the entity that its metadata names
// and whose directory holds it (metadata naming another entity is counted Foreign and left
// alone). SweepEntity does the same for one entity (TestSweepSparesInFlightWrite,
// TestWriteDeadline, TestSweepLeavesForeignAndReferencedBlobs,
// TestSweeperIgnoresMetadataNamingAnotherEntity).
//
// With Options.Sweeps, cleaning up does not wait for a periodic sweep. Every write that
// uploads a blob first enqueues a message (the eventually consistent transactions pattern:
// the message before the work), visible once the write's blobs are old enough to judge;
// Delete enqueues one before it deletes. HandleSweep, registered on a queueworker with
// Register, runs SweepEntity for the message's entity: it re-reads the entity and the
// listing, so duplicate, late or reordered messages are harmless, and it snoozes the
// message while some of the entity's blobs are still too young (TestSweepMessageAfterCrash,
// TestSweepWorkerCleansUp).
//
// # Cost in requests
//
// Insert: one upload per out-of-line part, one insert. Update and Upsert: one read, one
// upload per new out-of-line part, one conditional write, one delete per replaced blob.
// Get: one point query, plus one download per out-of-line part when eager (at least two
// storage transactions for the whole entity, as the guide notes). Delete: one read, one
// delete, one blob delete per part. Sweep: one list per 5,000 blobs, one read per entity
// with old blobs, one delete per orphan. With Options.Sweeps, one enqueue more per write
// that uploads and per Delete of an entity with blobs, and one SweepEntity per message.
// A write that uploaded blobs and was refused, or whose outcome is unknown, reads the
// entity once more to decide.
//
// # Errors
//
// Input that breaks a limit (the entity's, a part larger than Options.MaxPartBytes, a bad
// content type) is refused with an *errs.InvalidInputError before any request. Service
// errors wrap the SDK's sentinels (errs.ErrNotFound, errs.ErrPreconditionFailed,
// errs.ErrTransient, ...). ErrContentMismatch reports content that does not match the
// entity's size and hash; ErrDangling an entity pointing to a blob deleted outside the
// Store; ErrTampered a reference this Store did not write for that entity;
// errs.ErrOutcomeUnknown a write whose outcome cannot be told (see above)
// (TestInvalidInputSendsNothing, TestNewRefusesBadSetup). The Store logs through the
// table's logger (TestLogsThroughTheTableLogger), and its warnings never carry the query of
// a blob URL, where a SAS sits (TestLogsNeverCarryTheSAS).
package largeentity

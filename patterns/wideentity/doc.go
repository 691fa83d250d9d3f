// Package wideentity implements the wide entities pattern of the table design guide
// (the Azure Table storage design guide and its newer edition, "Table design patterns", "wide entities pattern"): a logical entity with more than 252
// properties, or more than 1 MiB of data, stored as several physical entities.
//
// # The problem
//
// An entity may have at most 252 properties of its own and 1 MiB of data. A relational
// database works around row limits with a second table in a one-to-one relationship; a
// table has no joins. The guide's example: the number of IM messages each employee sent on
// each of the last 365 days — 365 properties.
//
// # The solution
//
// Store one business object as several entities ("chunks") of one partition, each with
// its share of the properties, and treat them as one: write them together in one entity
// group transaction when they must stay in sync, update one property with a single merge
// of the chunk that holds it, read them all back and put them together.
//
//	table, _ := repo.New[codec.Entity](clients.Tables, "MessageStats",
//		&repo.Options{TrackWrites: true})                                   // required
//	store, _ := wideentity.New(table, nil)                                  // 2 chunks
//	err := store.Insert(ctx, &wideentity.Entity{PartitionKey: "Sales", RowKey: "000123",
//		Properties: days})                                                // 365 properties, 1 transaction
//	err = store.SetProperty(ctx, "Sales", "000123", "D2024_200", int32(17)) // 1 merge on its chunk
//	e, err := store.Get(ctx, "Sales", "000123")                             // 1 range query
//
// The chunks of logical RowKey rk have the RowKeys keys.Join(rk, n, i) ("000123!02!00",
// "000123!02!01"): they sort together, one range query on the prefix reads them, and any
// RowKey works (the escaped compound key keeps other entities of the partition out of the
// range). Which chunk holds a property is a pure function of its name (Options.ChunkOf, by
// default an MD5 bucket), so SetProperty knows where to merge without reading. The number
// of chunks n is in the key, so a merge aimed at a layout that is not the stored one finds
// nothing rather than a wrong chunk (SetProperty then rewrites the entity in the current
// layout; TestLayoutChange).
//
// The algorithm: wideentity.go
//
// Its edges live beside it: store.go (options and New), chunks.go (chunk keys and the
// layout of properties into chunks, with every limit), torn.go (putting chunks back
// together and detecting a torn read), outcome.go (which failures a read-modify-write
// retries).
//
// # Consistency
//
// Insert, Put, Update and Delete write or delete every chunk in one entity group
// transaction: atomic, all or nothing, even if the process or the connection dies in the
// middle (TestCrashDuringWriteLeavesOneWholeVersion). Each write stamps every chunk with
// the same new revision (RevProperty) and the chunk count (ChunksProperty). A reader that
// gets chunks of two revisions — a write committed between the pages of its query, or
// between its reads on a service that does not read a partition as a snapshot — detects it
// and reads again (Options.TornRetry; TestTornReadIsDetectedAndRetried,
// TestDamagedChunksAreReportedTorn), so Get only returns an entity as one write left it.
// Put of an entity read by Get, and Update, are conditional on the ETags of every chunk
// read: no update is lost between concurrent writers (TestConcurrentUpdatesLoseNothing,
// TestPutAfterRecognisedUpdateNeverErasesConcurrentSetProperty). The table tracks writes
// (repo.Options.TrackWrites): a transaction whose response was lost is recognised by its
// write id even after another writer built on it, so Update never applies fn twice
// (TestLostResponseThenAnotherUpdateAppliesFnOnce); only when the history cannot tell does
// it return errs.ErrOutcomeUnknown. The tracking property (repo.Table.WriteIDProperty) is
// the table's, never the entity's: New refuses one named like RevProperty or
// ChunksProperty (TestNewRefusesTrackingPropertyNamedLikeChunkProperty), writes refuse an
// entity property of that name or of repo.DefaultWriteIDProperty
// (TestWritesRefuseDataNamedLikeTrackingProperty, TestTrackingPropertyReserved), and reads
// ignore both names (TestGetAndUpdateIgnoreHistoryAfterTrackingPropertyChanges), so that
// chunks written while the table tracked under the default name read the same after it is
// reopened with another. SetProperty is the guide's single merge
// (TestSetPropertyMergesOneChunk): atomic for its one property and never in conflict with
// writes to other properties, but two properties set by two SetProperty calls are two
// writes (use Update to change them together).
//
// On a store that cannot delete a key holding U+2028 or U+2029 inside a transaction
// (Azurite; see package tabletest) the delete of a chunk whose RowKey holds one goes in a
// request of its own right after the transaction (repo.SubmitOrSplit): there, and only
// there, readers may see the transaction's writes before that delete, and a process that
// stops between the two leaves chunks that read as ErrTorn until Delete. The service
// never takes that path (TestDeleteRemovesEveryChunkWhenKeyHasLineSeparator,
// TestLayoutChangeRemovesOldChunksWhenKeyHasLineSeparator).
//
// # Cost in requests
//
//   - Get: one request (a range query; one page holds up to 1,000 chunks), against one
//     point query per chunk; more if a torn read is retried.
//   - Insert: one request (a transaction). Put and Update: two (read, transaction); a
//     conditional Put of an entity read earlier: one.
//   - SetProperty: one request (a merge).
//   - Delete: two (read the chunk keys, a transaction).
//
// # Issues and considerations
//
// A logical entity has at most MaxChunks (100) chunks (one transaction), each with at most
// PropertiesPerChunk (250) properties and 1 MiB, and less than 4 MiB in all (the
// transaction's limit): checked before any request, the error naming the chunk
// (TestLimitsRefusedWithoutRequest). Beyond that, store the large values in blobs (the
// Azure Table storage design guide, "large entities pattern"; patterns/largeentity).
//
// # Errors
//
// The sentinels these docs name (errs.ErrNotFound, errs.ErrPreconditionFailed,
// errs.ErrInvalidInput, ...) are those of package
// github.com/tablepatterns/tablepatterns/errs: test them with errors.Is.
package wideentity

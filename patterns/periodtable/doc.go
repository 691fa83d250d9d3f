// Package periodtable implements the high-volume delete pattern of the table design guide
// (the Azure Table storage design guide and its newer edition, "Table design patterns", "high-volume delete pattern") and the hot/cold separation of
// time-dependent data into monthly tables of Tablestore's primary key design guide ("separate cold and hot data"): one
// table per period of time, dropped whole when the period expires.
//
// # The problem
//
// Applications delete old data by date: every sign-in attempt older than 60 days, say.
// Stored in one table, with the attempt's date and time in the RowKey and one partition
// per user (which keeps inserts free of hot spots), old entities are expensive to find and
// to delete: a table scan to find them, then one delete per entity (or per 100 entities in
// an entity group transaction of one partition). Hundreds of thousands of sign-ins a day
// mean as many delete requests a day.
//
// # The solution
//
// Use a separate table for each day (or month, hour, week, or any fixed period) of
// attempts. Keep the same entity design inside each table, so inserts still spread over
// the users' partitions. To delete a day of data, delete its table: a single storage
// operation, whatever it holds.
//
// A Scheme names the tables: a prefix and the period's start, "SignIns20240501". The name
// is a pure function of the time, so a writer needs no lookup; the stamps have a fixed
// width, so the names sort as the periods do and one range query on the table names lists
// the tables of a time range (List). Tables[T] routes each write to the table of the period
// of the entity's time property (New's timeProperty), creating the table on the period's first write (or ahead of
// time with Prepare); Query reads a time range across its period tables with bounded
// parallelism and yields the entities period by period, in order; DropBefore and
// DropExpired drop every table whose period ended before a cutoff, with one delete each
// (TestWritesAreRoutedByTime, TestQueryFansOutAndMergesInOrder,
// TestRetentionDropsExpiredTablesOneDeleteEach).
//
//	scheme := periodtable.Scheme{Prefix: "SignIns", Period: periodtable.Daily}
//	signIns, _ := periodtable.New[SignIn](clients.Tables, scheme, "AttemptTime",
//		&periodtable.Options{Retention: 60 * 24 * time.Hour})
//	err := signIns.Insert(ctx, &attempt)              // into SignIns20240501
//	for s, err := range signIns.Query(ctx, from, to, repo.Query{}, nil) { ... }
//	dropped, err := signIns.DropExpired(ctx)           // one DELETE per expired day
//
// # Never reusing a deleted name
//
// The service keeps the name of a deleted table unusable for a while (TableBeingDeleted,
// 40 seconds and more), and the guide advises to always use unique table names. Here a
// name is reused only if a period is written after its table was dropped, and that is
// prevented: with Options.Retention set, writes to a period that ended Retention ago are
// refused before any request (errs.ErrInvalidInput), and only such periods can be dropped
// (Drop, DropBefore and DropExpired keep a margin for clock skew on top of Retention). A
// period table found being deleted when a write wants to create it is not waited for:
// the write fails with errs.ErrTableBeingDeleted rather than re-create the name later
// (TestRetentionGuardsSendNothing, TestTableBeingDeleted).
//
// # Hot and cold tables, archive (Tablestore: separate cold and hot data)
//
// Tablestore's hot/cold separation is the same component with Monthly tables: writes and
// most reads go to the current month's table, older months are read less and less, and
// tables past the maintenance period are exported to archive storage, then deleted. The
// export belongs to the archiver (patterns/consistency's archive-table job, run by
// queueworker/cmd/archiver); this package gives it what it needs: List with EndBefore
// (the tables older than a cutoff), Scheme.TableFor, Scheme.Parse and ParsePeriod (the
// table name <-> period mapping), Table (a repository to read a period table whole) and
// Drop (delete it once archived). An archiver that does not know the entity type uses
// Tables[codec.Entity] (see TestDynamicEntitiesForArchivers).
//
// The archiver only exports sealed periods: set Options.SealAfter on every writer to at
// most the archiver's grace (consistency.Options.SealGrace), so that writes to a period
// that ended SealAfter ago are refused before any request and its table is never
// created again. A write whose table disappeared while it was in flight (TableNotFound)
// checks the period again, by the clock of that moment, before it creates the table
// (TestSealAfterRefusesWrites, TestWriteInFlightDoesNotRecreateDroppedPeriod). Drop,
// DropBefore and DropExpired keep Options.ClockSkew on top of Retention
// (TestDropKeepsClockSkewMargin).
//
// # Consistency
//
// Each entity lives in exactly one table, chosen from its own time, so a write is one
// entity write with the consistency of repo (atomic, ETag concurrency). Creating a
// period's table is idempotent and races between writers are harmless
// (TestConcurrentFirstWritesOfAPeriod, TestFirstWriteStoppedBetweenStepsThenRerun).
// Dropping is one request per table and idempotent (a table already gone counts as
// dropped), so a retention run that stopped half way is finished by running it again
// (TestFaultsOnWritesAndDrops). A query that spans a table being dropped sees that period
// as empty. With repo.Options.Encryption, each period table binds its entities to its own name:
// an entity of one period copied into another period's table fails to read there
// (TestEncryptionBoundPerPeriodTable).
//
// # Cost in requests
//
//   - Insert, Upsert, Get: one request; the first write of a period three (the insert that
//     finds no table, the create, the insert again), or one if Prepare ran.
//   - Query over k period tables: one request to list them, then one per page of each
//     table, up to Options.Concurrency tables at a time.
//   - Dropping a period: one request, against one delete per entity (or per 100 with
//     transactions) plus the scan to find them (see BenchmarkDropPeriod: 10,000 entities).
//
// # Issues and considerations
//
//   - Other uses of the data (a user's history across periods, aggregates) must fan out
//     over the period tables; design for it (the Azure Table storage design guide).
//   - A new table is throttled at first while the service learns its access pattern;
//     consider how often tables are created, and Prepare the next period's table ahead
//     (the Azure Table storage design guide).
//   - Periods are in UTC. Periods are chosen so that retention is a whole number of them:
//     a table is dropped only when its whole period has expired.
//   - Table names are case-insensitive on the service; a Scheme writes and parses one
//     spelling. Do not use two schemes whose prefixes differ only in case.
//
// # Errors
//
// The sentinels these docs name (errs.ErrNotFound, errs.ErrPreconditionFailed,
// errs.ErrInvalidInput, ...) are those of package
// github.com/tablepatterns/tablepatterns/errs: test them with errors.Is.
//
// # Reading the code
//
// The algorithm: periodtable.go
//
// It reads as the guide's steps: route a write to the table of its period (created by
// the period's first write), list the tables of a range, and drop a period's table whole
// once it has expired. The fan-out query is in query.go; the creation that never waits
// for a name being deleted in create.go; reading the routing time (also from a type with
// encrypted fields) in timeprop.go; names and periods in period.go; options and the
// constructor in tables.go.
package periodtable

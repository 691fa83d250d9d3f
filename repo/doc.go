// Package repo is the typed repository layer of tablepatterns: Table[T] reads and writes
// entities of a Go struct type T in one Azure table, and every pattern package is a short
// composition of its operations.
//
// # What it does for you
//
//   - Point reads, inserts, upserts and updates (Replace or Merge), deletes and idempotent
//     deletes, with ETag optimistic concurrency: an update is conditional on the value's
//     ETag when T carries one (ErrPreconditionFailed when another writer won).
//   - Queries built with package filter, whose values can never change the filter's
//     structure; projections ($select) into a smaller struct with Project; results as an
//     iter.Seq2 that follows continuation tokens, or one page at a time with a token that
//     can be stored and used to resume in another process.
//   - Entity group transactions (Submit) across entity types of one partition, refused
//     before sending when they break a limit (one table, one partition, one action per
//     entity, at most 100 actions, under 4 MiB), with the failed action's index and real
//     error code on failure and each action's new ETag on success.
//   - Bulk writes (BulkWrite) that are not atomic and say so: grouped by partition,
//     chunked into transactions, run in parallel across partitions, one result per entity.
//   - Parallel queries with bounded concurrency (QueryParallel).
//   - Client-side encryption of the properties tagged "encrypt" (Options.Encryption; the
//     envelope, its layout and what it binds are in codec's doc, "Encryption"): every
//     write encrypts, every read decrypts, merges of such entities are refused, and
//     RotateKeys re-wraps a table's content keys under a new key-encryption key, or with
//     RotateOptions.Reencrypt re-encrypts every entity under a fresh content key (after a
//     key compromise), resumably (the design guide, "Encrypting table data").
//   - Clients authorized by a shared access signature instead of the account key
//     (NewTablesWithSAS, with tokens from package repo/sas, HTTPS-only by default; the
//     design guide, "Control access with shared access signatures").
//
// # Errors
//
// Every error wraps one of the sentinels when it applies (ErrNotFound, ErrAlreadyExists,
// ErrPreconditionFailed, ErrTableBeingDeleted, ErrInvalidInput, ErrTransient,
// ErrOutcomeUnknown) and keeps the *azcore.ResponseError reachable with errors.As. Input
// that breaks a service limit is refused with an *InvalidInputError before any request is
// sent: Azurite, the emulator, does not enforce many of those limits, the real service does.
//
// # Deletes the emulator misaddresses
//
// Inside an entity group transaction Azurite reads a delete's keys with a regular
// expression that stops at U+2028 and U+2029: the delete of such a RowKey reaches the row
// with the empty RowKey of the partition (without If-Match it deletes that row and
// answers success), and one of such a PartitionKey is refused (400). Submit never sends
// such a delete unconditionally: without an ETag it reads the entity's ETag first and
// makes the delete conditional on it, and a delete the store refuses while its entity is
// still there unchanged fails the transaction with a *MisaddressedDeleteError
// (ErrDeleteMisaddressed), nothing written (TestSubmitNeverDeletesAnotherEntityForALineSeparatorKey).
// SubmitOrSplit, which the pattern packages use, then sends the other actions as one
// transaction and each such delete alone (TestSubmitOrSplitDeletesALineSeparatorKeyApart):
// atomicity is given up for those deletes only, on a store that proved it cannot do them
// in a transaction. The service addresses every key right and never takes that path.
//
// # Retries
//
// Every request goes through package retry: transient failures (timeouts, server busy,
// dropped connections) are retried with the jittered exponential backoff of "Designing a
// scalable partitioning strategy" and logged. Clients built by package repo/account (or
// with TableClientOptions) have the Azure SDK's own retries turned off, so one failure is
// never retried by two layers at once, and share one retry.Gate per client, which slows the
// client under sustained throttling instead of feeding a retry storm. BulkWrite spreads
// its transactions over partitions with retry.Schedule, so that a busy partition slows
// only its own transactions while the others keep their pace.
//
// Non-idempotent writes (inserts, conditional updates and deletes, transactions) never
// report success for what did not happen. A failed attempt either proves nothing was
// applied (503 ServerBusy, 429, no connection: the retry's answer is then the truth) or
// leaves it open (a timeout, a reset, a 500: retry.MayHaveApplied). After the second kind,
// a 409, 412 or 404 on the retry may be the echo of the earlier attempt's own success or
// another writer's doing, and content cannot tell them apart (two increments of 5 both
// write 6): the write returns an *OutcomeUnknownError (ErrOutcomeUnknown), which carries
// the service's answer without unwrapping to it. With Options.TrackWrites, inserts and
// conditional updates store a random write id with the entity's recent ids, and the retry
// reads the entity: its id there proves the write happened (success, with an ETag that
// matches no version, since its own was in the lost response). The cost is one extra
// read, only on that path, and about 200 bytes per entity. A read-modify-write loop that
// meets ErrOutcomeUnknown decides with DecideOutcome (or Table.DecideOutcome): it starts
// over only when an entity its write was conditional on still holds that ETag, the one
// proof that nothing landed; found, gone or changed proves nothing (retry.Evidence).
//
// An attempt the client gave up on (its deadline passed, its answer lost) may still be
// applied by the service later, after a newer write of the same entity that succeeded: a
// store goes on with a request it received, and one it had not read yet can be applied
// after later requests. An unconditional write (Upsert; Update or Delete without an
// ETag) applied that late puts its older version back. Where the order of one entity's
// writes matters, write If-Match the ETag read: the late attempt then meets a version
// that has changed and is refused (patterns/migrate sends every application write so,
// for that reason). No condition holds back an insert applied late onto a key still
// absent, such as one deleted since: the delete is then undone.
//
// # Cost in requests
//
// Get, Insert, Upsert, Update and Delete: one request (plus one read after an ambiguous
// retry with TrackWrites). Submit: one request for up to 100
// entities (plus one read per unconditional delete of a key holding U+2028 or U+2029). A query: one request per page of up to 1,000 entities. BulkWrite of n
// entities over p partitions: about p + n/100 requests. Encryption adds no request (one
// WrapKey per write and one UnwrapKey per read, local for a codec.LocalKey). RotateKeys of
// n entities: n/1000 queries and about one transaction per 100 entities of a partition
// (the queries read whole entities when re-encrypting).
//
// # Signing in without the account key
//
// NewTokenClients builds the clients from service endpoints (AccountEndpoints derives them
// from an account name) and a Microsoft Entra ID token credential, such as
// azidentity.DefaultAzureCredential, for accounts whose shared-key access is turned off.
// Everything works with a token except signing table SAS tokens (package repo/sas), which
// needs the account key.
//
// # Telemetry
//
// ClientOptions.Azure carries the Azure SDK's client options: with TracingProvider set to
// azotel.NewTracingProvider(tracerProvider, nil) every request is an OpenTelemetry span,
// a child of the caller's span. The clients of NewClients and NewTokenClients count every
// attempt (MetricRequests) and every throttling answer (MetricThrottled) on the global
// OpenTelemetry meter provider; this package depends on the OpenTelemetry API only.
package repo

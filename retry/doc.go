// Package retry retries storage operations: jittered exponential backoff, the
// classification of transient errors, and one zap log entry per retry.
//
// # The formula ("Designing a scalable partitioning strategy")
//
// "Designing a scalable partitioning strategy" explains that the service
// answers Server Busy (503) and Timeout errors while it moves an overloaded partition to
// another server, that the partition comes back after a few seconds, and that these errors
// (unlike 401 and most 4xx, or 501 and 505) should be retried with exponential backoff and
// a random element, so that many clients do not come back at the same moment. Its formula,
// with x the retry number (1 for the first retry), z the default backoff and zmin/zmax the
// bounds:
//
//	y = Rand(0.8z, 1.2z) * (2^x - 1)
//	y = Min(zmin + y, zmax)
//
// Policy maps z, zmin and zmax to Delay, MinDelay and MaxDelay; Policy.NewBackOff returns
// it as a backoff.BackOff of cenkalti/backoff/v4 for code that drives its own loop.
//
// # Defaults
//
// The zero Policy is for interactive calls: z = 200 ms, zmin = 100 ms, zmax = 10 s,
// 6 retries, 1 minute in all. The waits are then about 0.3 s, 0.7 s, 1.4 s, 3.1 s, 6.3 s
// and 10 s: about 22 s, which covers the few seconds a partition is offline during load
// balancing without holding a user for minutes. azcore's own default is 3 retries from
// 0.8 s; we retry more often and sooner, with the same order of total time.
//
// BatchPolicy returns the values of the partitioning article's code sample (defaultBackoff 30 s,
// backoffMin 3 s, backoffMax 90 s, retryCount 5) for batch jobs and queue workers.
//
// # Optimistic concurrency
//
// Optimistic is the read-modify-write loop of every pattern, written once: each round
// reads, decides and writes conditionally (If-Match on what it read, or an insert), and
// returns Again(err) when it lost a race (Conflicted: a 412 or a creation 409 on what the
// round itself read) so that the next round starts from a fresh read, with the jittered
// waits of Conflict() (z = 10 ms, up to 50 rounds). A write whose earlier attempt may have
// been applied (errs.ErrOutcomeUnknown) is never counted as success: the round re-reads
// and Decide concludes from what the read proves (Evidence), in one place for every pattern. A mark of Again counts only on the round's own return value, and no
// error leaves the loop marked, so nested loops never restart each other.
//
// # One layer of retries
//
// azcore retries every HTTP call by itself (3 retries from 0.8 s on 408, 429, 500, 502,
// 503, 504 and transport errors, POST included). Under Do, and under a queue's
// redeliveries, one failing call would become up to 4 x 7 x 5 = 140 requests, and the
// waits would not follow the formula. So every client the SDK builds sets azcore's
// policy.RetryOptions.MaxRetries to -1 (0 means azcore's default of 3), and this package
// owns all retries: transient ones (IsTransient) and semantic ones (Op.Retryable, e.g. a
// 412 in a read-modify-write loop). For the same reason IsTransient never retries an
// error that already is ErrTransient: an exhausted inner retry loop is final.
//
// An application that hands in its own aztables client keeps that client's retry
// options; if they are azcore's defaults, each attempt of Do may itself be up to four
// requests. Build such clients with MaxRetries -1.
//
// # Errors
//
// Do returns a non-retryable error as it is, an *ExhaustedError (which unwraps to both
// ErrTransient and the last error, so errors.As still reaches *azcore.ResponseError) when
// the policy gives up, or the context's error when ctx ends. Log entries and error texts
// never contain URL query strings, SAS signatures, account keys or Authorization values.
//
// An operation whose keys may hold values (an index copy's key holds the indexed value)
// sets Op.SensitiveKeys, or runs under a context marked by WithSensitiveKeys (the way a
// pattern marks the requests it sends through repo): its log entries and the texts of
// the errors Do returns then withhold the keys and give each failure's class (HTTP status
// and service error code, or sentinel) instead of its text, which names them.
//
// # Throughput: partitions and the account
//
// The service serves about 2,000 entities/s per partition and 20,000 per account, and
// says which limit a request met (Scope, ThrottleScope). A bulk path reaches the account's
// rate only when its concurrent requests spread over partitions, and a throttled
// partition must slow only itself. Schedule is the one scheduler of every path that
// writes many partitions: it runs tasks spread over partitions, with a bound per
// partition, and marks each task's context with its partition (WithPartition). The Gate
// in the client's pipeline then keeps a rate per marked partition besides the client's:
// "The server is busy." slows that partition's tasks, and tells Schedule to start other
// partitions' tasks meanwhile; an account-limit answer slows the client. Within one
// Schedule, the rate at which one partition met its limit paces the other partitions
// that have none yet, so that each does not meet its limit once to learn it. To put a
// path on it, give Schedule one task per transaction (or per request) with the partition
// it addresses:
//
//	err := retry.Schedule(ctx, partitionOfEachChunk, &retry.ScheduleOptions{Concurrency: 8},
//		func(ctx context.Context, i int) error { return sendChunk(ctx, i) })
//
// # Metrics
//
// Do and the Gate record OpenTelemetry metrics through the OpenTelemetry API only (no SDK
// is linked): MetricAttempts counts every attempt by operation (Op.Name), by the Reason it
// failed ("none" for a success) and by what followed (success, retried, failed, exhausted,
// interrupted); MetricWait records the waits before retries, by operation and reason, so
// the waits of reason "throttled" are the throttling waits; the Gate records the requests
// it held (MetricGateWait), the throttled answers it saw (MetricGateThrottled) and its
// cuts (MetricGateCuts). They go to Policy.MeterProvider and GateOptions.MeterProvider,
// the global provider (otel.GetMeterProvider) when nil; an application that installs no
// SDK pays for no-op calls. Attributes never hold a table name, a key or an error's text.
package retry

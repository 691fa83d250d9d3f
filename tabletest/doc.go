// Package tabletest runs an in-memory Azurite, the official Azure Storage emulator, for the
// tests of programs that use tablepatterns (or the Azure SDK for Go directly), the way
// tablepatterns' own tests do.
//
// Azurite is an npm package. Install it once in your module root:
//
//	npm install --save-dev azurite
//
// (or globally: npm install -g azurite). Start looks for node_modules/.bin/azurite in the
// module root (the nearest directory at or above the working directory holding go.mod,
// which is where `go test` runs a package's tests from), then for azurite on PATH. If it
// finds neither, the error (and the test failure) says exactly that command.
//
// # One server per test binary, started on first use
//
// Azurite starts in about 2 seconds. Share one per test binary and start it only when a
// test needs it, so that pure tests (encoders, fuzz targets) run without it:
//
//	var azurite = tabletest.NewEnv(nil)
//
//	func TestMain(m *testing.M) { os.Exit(azurite.Run(m)) }
//
//	func TestOrders(t *testing.T) {
//		s := azurite.Server(t) // starts Azurite the first time; fails t if it cannot
//		clients, err := account.NewClients(s.ConnectionString(), nil)
//		...
//	}
//
// Each server listens on 127.0.0.1 with ports chosen by the operating system, so parallel
// test binaries never collide, and keeps everything in memory. Give each test its own
// table, queue and container names. New starts a private server for one test instead.
//
// # Bearer tokens (Microsoft Entra ID)
//
// With Options.OAuth, Azurite serves HTTPS with a self-signed certificate generated at start
// and checks bearer tokens the way its "basic" OAuth level does (audience, issuer and
// lifetime; not the signature). Server.Credential returns an azcore.TokenCredential whose
// tokens it accepts, and Server.ClientOptions a transport that trusts the certificate, so
// code that takes a token credential in production (account.NewTokenClients) can be tested
// without any account key. Azurite still accepts the well-known development key too: a
// test proves it uses tokens only by not being given the key.
//
// # Clients
//
// Server.Clients returns raw Azure SDK clients with the SDK's own retries turned off
// (tablepatterns' retry package owns retries). For package repo, build clients with
// account.NewClients(s.ConnectionString(), nil), or account.NewTokenClients with s.Credential().
//
// # Programs
//
// Main is the main function of a small program, such as tablepatterns' runnable examples,
// that runs on an embedded Azurite, or with -use-env on the account of
// AZURE_STORAGE_CONNECTION_STRING: every example under examples/ imports only public
// packages and can be copied into another module as it is.
//
// # Where Azurite 3.37.0 differs from the service
//
// A test that passes on Azurite proves less than one against an account. Differences the
// project met and verified, and what its code does about them:
//
//   - Azurite enforces few service limits (entity and property sizes, property counts,
//     transaction payload): package repo checks every one before sending.
//   - Azurite never throttles (no 503 ServerBusy, no 500 OperationTimedOut): the fault
//     proxy's rules and throttling model inject them.
//   - Entity group transactions: Azurite extracts an action's keys from its decoded URL with
//     a regular expression whose "." stops at U+2028 and U+2029. A delete of a key holding
//     one of them (which has no body to fall back on) addresses another entity: without
//     If-Match it deletes the row whose RowKey is empty, in the same partition, and answers
//     success; with If-Match it answers 404 or 412. A PartitionKey holding one is not read
//     at all (400). Single-entity requests and inserts, upserts and updates in a
//     transaction are not affected. repo.Submit never sends such a delete without an ETag
//     (it reads one first) and reports a refused delete of an unchanged entity as
//     repo.ErrDeleteMisaddressed; repo.SubmitOrSplit, which the pattern packages use, then
//     deletes those keys alone after the rest of the transaction, so on Azurite, and only
//     there, such a delete is not atomic with the rest. The archive moves confirm a refused
//     delete with a read.
//   - A whole Edm.Double reads back as Edm.Int32. A filter with an Edm.Int64 literal
//     (N lt 500L) answers 500 as soon as it meets an entity whose property N holds a
//     JSON number (Edm.Int32, Edm.Double) or a boolean; against Edm.Int64, strings
//     (compared as numbers), DateTime, Guid, Binary or an absent N it answers. An Int32
//     literal against an Edm.Int64 property answers and compares the values. Filters
//     match literals of another type than the stored one: compare types, not only
//     values (TestAzuriteAnswers500ForAnInt64LiteralAgainstANumberProperty).
//   - Azurite keeps an idle connection alive for 5 s. A request that reuses a pooled
//     connection as it closes fails with "use of closed network connection" or "server
//     closed idle connection"; package retry retries both.
package tabletest

// Package testenv is the test bundle every package's tests share: one storage account per
// test binary, unique resource names per test, and raw Azure SDK clients.
//
// A package's tests start with
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// The first test that needs storage starts an in-memory Azurite on loopback for the whole
// test binary (internal/azurite's Lazy, the lifecycle the public helper package tabletest
// shares); Main stops it after the tests. Tests that need no storage (codec, fuzz targets) run
// without Azurite installed. If Azurite cannot be started, every test that needs it fails
// with a message that says how to install it; tests are never skipped, so a green run
// always means the tests ran against a real server.
//
// # Using another account
//
// If TABLEPATTERNS_TEST_CONNECTION_STRING is set, Main uses that account instead (a real
// storage account, the Cosmos DB Table API, or an Azurite started elsewhere). The variable is
// deliberately not AZURE_STORAGE_CONNECTION_STRING, so that a test run never touches a
// production account by accident. Tests create and delete their own uniquely named tables,
// queues and containers there. The connection string holds the account key: testenv never
// prints it, only the account name and the endpoint hosts.
//
// # Names
//
// TableName, QueueName and ContainerName derive a valid name from the test name, a counter
// unique in the process and a random part, so parallel tests and reruns against a shared
// account never collide. Names are at most 40 characters, leaving room for a suffix of up to
// 23 (a `-poison` queue, a per-period table suffix).
//
// # Clients
//
// TableService, QueueService and BlobService return raw SDK clients with the SDK's own
// retries disabled (Retry.MaxRetries = -1, see DESIGN.md "Pinned dependencies"), for tests
// that look at the service directly. Proxies routes all three services through fault proxies.
package testenv

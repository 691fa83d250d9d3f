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
package tabletest

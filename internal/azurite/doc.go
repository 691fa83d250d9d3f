// Package azurite starts and stops an embedded Azurite, the official Azure Storage emulator,
// for the tests and the demo program.
//
// Azurite is the npm package pinned in the module's package.json and installed by `npm ci`
// (which `make test` and `make demo` run). Start runs it in memory on 127.0.0.1 with ports
// chosen by the operating system, so that parallel test binaries never collide, and waits
// until the Blob, Queue and Table services all answer HTTP. Close stops it.
//
// The server uses the well-known development account (devstoreaccount1) and path-style
// endpoints such as http://127.0.0.1:PORT/devstoreaccount1. Server.ConnectionString is what
// the Azure SDK constructors (aztables.NewServiceClientFromConnectionString,
// azqueue.NewServiceClientFromConnectionString, azblob.NewClientFromConnectionString) take.
//
// # Orphans
//
// Azurite runs in its own process group, and Close signals the whole group. On Linux the
// child also gets SIGKILL from the kernel when the process that started it dies (Pdeathsig),
// so a test binary killed by a timeout or a signal does not leave Azurite running. On other
// systems a killed parent can leave Azurite behind; it holds only memory and loopback ports.
//
// ParseConnectionString builds a Server without a process for an account run elsewhere
// (real Azure, or an Azurite started by hand); Close on such a Server does nothing.
//
// This package does not import testing: it is used by the demo program as well.
package azurite

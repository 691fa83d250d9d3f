// Package faultproxy is a loopback HTTP reverse proxy that sits between an Azure SDK client
// and the storage service (Azurite in tests), to count requests, inject faults and play the
// behaviours of real Azure that Azurite lacks.
//
// One Proxy fronts one service endpoint. Point a client at it by swapping the scheme and host
// of the endpoint and keeping the path:
//
//	p, _ := faultproxy.New("http://127.0.0.1:10002")           // Azurite's table port
//	endpoint := p.URL() + "/devstoreaccount1"                  // path-style, as Azurite's
//
// (internal/testenv.Proxies does this for all three services of the test account.)
// Shared Key signatures stay valid through the proxy: they cover the path and, for tables,
// only the comp parameter of the query, never the host.
//
// # Rules
//
// Rules are evaluated in the order they were added, once per request. The first rule whose
// Match accepts the request, whose Times is not used up and whose Probability draw succeeds
// fires its Action: Respond (a synthesized Azure error), Delay (then forward), DropBeforeForward
// (close the connection; the service never sees the request) or DropAfterForward (forward, so
// the write happens, then close the connection without a response: the "lost response" case
// that makes retried inserts see 409 and retried enqueues duplicate). Probabilities come from
// one seeded generator (SetSeed), so a serial test is reproducible.
//
// Mind the Go HTTP client when dropping connections: net/http silently resends a GET, HEAD,
// OPTIONS or TRACE request (or one with an Idempotency-Key header) once its keep-alive
// connection is closed before any byte of a response, as it would against the real service.
// A drop rule with Times 1 on a read may therefore be invisible to the caller; the proxy
// still counts both requests. POST, PUT, PATCH, MERGE and DELETE are never resent.
//
// # Counting
//
// Every request that reaches the proxy is recorded (method, path, query, rule fired) whether
// or not it was forwarded: tests assert that a check in the SDK fired before any request
// was sent, or that a retry policy sent exactly n requests.
//
// # Emulating real Azure
//
// EmulateTableBeingDeleted answers a re-create of a just-deleted table with 409
// TableBeingDeleted, as Azure does for 40 s and more. EmulatePaging serves entity queries in
// short pages that carry continuation headers, optionally with an empty first page that still
// carries a continuation, as Azure may do at any time; Azurite only pages beyond 1,000 rows.
// The empty page needs tokens in Azurite's format (see EmulatePaging), so that part works
// against Azurite only.
//
// The proxy buffers each request and response body in memory; it is a test tool, not a
// production component. It listens on 127.0.0.1 only.
package faultproxy

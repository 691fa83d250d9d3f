// Package tablepatterns is the root of the tablepatterns module: typed repositories for
// the patterns of the Azure Table storage design guide, on the Azure SDK for Go. The
// packages to import are repo (typed tables), the patterns under patterns/, queueworker,
// codec, retry and, for tests, tabletest. This package holds only the module's version.
package tablepatterns

import "github.com/tablepatterns/tablepatterns/internal/version"

// Version is the module's semantic version. It is also the instrumentation version of the
// module's OpenTelemetry tracer and meter. CHANGELOG.md lists the changes of each version.
const Version = version.Version

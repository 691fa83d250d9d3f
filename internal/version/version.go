// Package version holds the version of the tablepatterns module, re-exported as
// tablepatterns.Version and reported as the instrumentation version of its telemetry.
package version

// Version is the module's semantic version; CHANGELOG.md lists what each one changed.
const Version = "0.9.0"

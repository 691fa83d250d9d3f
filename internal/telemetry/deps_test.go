package telemetry_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The library and the programs that embed the archiver (the examples, the demo) depend
// on the OpenTelemetry API only: no SDK, exporter, Prometheus or gRPC package is linked
// into them. Only the archiver binary (queueworker/cmd/archiver) links exporters.
func TestLibraryLinksNoTelemetrySDK(t *testing.T) {
	t.Parallel()
	out, err := exec.CommandContext(t.Context(), "go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	list := func(args ...string) []string {
		cmd := exec.CommandContext(t.Context(), "go", append([]string{"list"}, args...)...)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %v: %v", args, err)
		}
		return strings.Fields(string(out))
	}
	var roots []string
	for _, p := range list("./...") {
		if strings.Contains(p, "/internal/") || strings.Contains(p, "/cmd/") {
			continue
		}
		roots = append(roots, p)
	}
	if len(roots) < 20 {
		t.Fatalf("only %d packages listed: %v", len(roots), roots)
	}
	forbidden := regexp.MustCompile(`^go\.opentelemetry\.io/otel/(sdk|exporters)(/|$)|^github\.com/prometheus/|^google\.golang\.org/(grpc|protobuf)(/|$)|^go\.opentelemetry\.io/proto/`)
	api := false
	for _, dep := range list(append([]string{"-deps"}, roots...)...) {
		if forbidden.MatchString(dep) {
			t.Errorf("a library package or example links %s", dep)
		}
		api = api || dep == "go.opentelemetry.io/otel/metric"
	}
	if !api {
		t.Fatal("the OpenTelemetry metric API is not among the dependencies: the list is wrong")
	}
	var archiver bool
	for _, dep := range list("-deps", "./queueworker/cmd/archiver") {
		archiver = archiver || strings.HasPrefix(dep, "go.opentelemetry.io/otel/exporters/")
	}
	if !archiver {
		t.Fatal("the archiver binary links no exporter: the check cannot tell")
	}
}

package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/azurite"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/queueworker/cmd/archiver/app"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// Bad telemetry and progress flags are usage errors (exit 2) before any request: the
// account's endpoints count what reaches them. A program built without exporters (this
// test binary, like the demo) refuses -otel otlp and -metrics-addr rather than ignoring them.
func TestTelemetryFlagsRefusedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	cs := fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%[2]s;AccountKey=%[3]s;BlobEndpoint=%[1]s/%[2]s;QueueEndpoint=%[1]s/%[2]s;TableEndpoint=%[1]s/%[2]s;",
		srv.URL, azurite.DevAccountName, azurite.DevAccountKey)
	getenv := func(k string) string {
		if k == "TP_CONN" {
			return cs
		}
		return ""
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-otel", "jaeger"}, `-otel "jaeger": want otlp or none`},
		{[]string{"-metrics-addr", "9464"}, `-metrics-addr "9464": want HOST:PORT`},
		{[]string{"-metrics-addr", "localhost:http"}, `want HOST:PORT`},
		{[]string{"-metrics-addr", ":9464"}, `-metrics-addr ":9464" names no host, which would listen on every interface`},
		{[]string{"-progress", "never"}, `-progress`},
		{[]string{"-progress", "-5s"}, `-progress`},
		{[]string{"-otel", "otlp"}, "built without telemetry exporters"},
		{[]string{"-metrics-addr", "127.0.0.1:0"}, "built without telemetry exporters"},
	} {
		var out, errOut strings.Builder
		args := append([]string{"run", "-drain", "-allow-any", "-connection-string-env", "TP_CONN"}, tt.args...)
		code := app.Main(t.Context(), args, &out, &errOut, getenv)
		if code != app.ExitUsage || !strings.Contains(errOut.String(), tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 with %q", tt.args, code, errOut.String(), tt.want)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests sent for bad command lines", n)
	}
	var out strings.Builder
	if app.Main(t.Context(), []string{"help"}, &out, &out, getenv) != app.ExitOK || !strings.Contains(out.String(), "-metrics-addr HOST:PORT") {
		t.Errorf("help does not document the telemetry flags:\n%s", out.String())
	}
}

// Not on a terminal, `run -progress` logs every phase of an archive-table job as
// structured entries of one shape, the export's up to one that is done and counts every
// entity.
func TestRunLogsTableProgress(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	day, err := repo.New[codec.Entity](clients.Tables, testenv.TableName(t)+"Day", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := day.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = day.DeleteTable(context.Background()) })
	const n = 60
	items := make([]*codec.Entity, n)
	for i := range items {
		items[i] = &codec.Entity{PartitionKey: fmt.Sprintf("user%d", i%3), RowKey: fmt.Sprintf("%04d", i)}
	}
	if err := day.BulkWrite(ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	queue, container := testenv.QueueName(t), testenv.ContainerName(t)
	if code, _, stderr := archiver(t, "enqueue", "archive-table", "-queue", queue, "-table", day.Name(), "-container", container, "-sealed"); code != 0 {
		t.Fatalf("enqueue: %d %s", code, stderr)
	}
	start := time.Now()
	code, out, stderr := archiver(t, "run", "-drain", "-allow-any", "-queue", queue, "-progress", "1ns")
	if code != 0 || !strings.Contains(out, "processed 1") {
		t.Fatalf("run -drain: exit %d\n%s\n%s", code, out, stderr)
	}
	entry := regexp.MustCompile(`(?m)^\S+\tinfo\tprogress\t\{"job": "archive-table", "phase": "(\w+)", "table": "` + day.Name() + `", "generation": "[^"]+", "entities": (\d+), "total": (\d+), "perSecond": [0-9.]+, "elapsed": [0-9.e-]+, "done": (true|false)\}$`)
	all := entry.FindAllStringSubmatch(stderr, -1)
	if n := strings.Count(stderr, "\tprogress\t"); n != len(all) {
		t.Fatalf("%d progress entries, %d of them in the one shape:\n%s", n, len(all), stderr)
	}
	var entries [][]string
	for _, e := range all {
		if e[1] == "export" {
			entries = append(entries, []string{e[0], e[2], e[4]})
		}
	}
	if len(entries) < 2 {
		t.Fatalf("%d progress entries, want the export's:\n%s", len(entries), stderr)
	}
	last := entries[len(entries)-1]
	if last[1] != fmt.Sprint(n) || last[2] != "true" {
		t.Fatalf("last progress entry %q, want %d entities, done", last[0], n)
	}
	for _, e := range entries[:len(entries)-1] {
		if e[2] != "false" {
			t.Fatalf("done before the end: %q", e[0])
		}
	}
	// The check after the export and the delete report too, with their totals.
	phases := map[string]bool{}
	for _, e := range all {
		phases[e[1]] = true
		if e[1] != "export" && e[3] == "0" {
			t.Fatalf("a %s entry without its total: %q", e[1], e[0])
		}
	}
	if !phases["verify"] || !phases["delete"] {
		t.Fatalf("phases reported: %v, want export, verify and delete", phases)
	}
	if strings.Contains(stderr, "\r") || time.Since(start) > time.Minute {
		t.Fatalf("terminal output in a log, or a slow run")
	}
}

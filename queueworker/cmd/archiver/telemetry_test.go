package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/consistency"
	"github.com/tablepatterns/tablepatterns/patterns/tablearchive"
	"github.com/tablepatterns/tablepatterns/queueworker"
)

// process is a running archiver.
type process struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
}

// start starts bin with args against the test account, with env added to its
// environment.
func start(t *testing.T, bin string, env []string, args ...string) *process {
	t.Helper()
	p := &process{stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	p.cmd = exec.CommandContext(t.Context(), bin, args...)
	p.cmd.Env = append(append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+testenv.ConnectionString(t)), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	return p
}

// waitFor polls until cond holds. It fails t, with what the archiver wrote, only when the
// archiver has written nothing new for testenv.DefaultStall (a stall, not a slow machine:
// the overall bound is go test -timeout).
func (p *process) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	written := func() int { return len(p.stdout.String()) + len(p.stderr.String()) }
	last, moved := written(), time.Now()
	for !cond() {
		if n := written(); n != last {
			last, moved = n, time.Now()
		} else if idle := time.Since(moved); idle > testenv.DefaultStall {
			t.Fatalf("waiting for %s: the archiver wrote nothing for %v\nstdout: %s\nstderr: %s", what, idle.Round(time.Second), p.stdout.String(), p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not synchronisation by sleep
	}
}

// term stops the archiver with SIGTERM and returns how it exited.
func (p *process) term(t *testing.T) error {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	return p.cmd.Wait()
}

// accountKey is the key of the test account's connection string, which must never leave
// the archiver in telemetry or logs.
func accountKey(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`AccountKey=([^;]+)`).FindStringSubmatch(testenv.ConnectionString(t))
	if m == nil {
		t.Fatal("the test connection string has no AccountKey")
	}
	return m[1]
}

// archiveEntityJob enqueues a job that moves one entity.
func archiveEntityJob(t *testing.T, kb *killBed) {
	t.Helper()
	src := kb.table(t, "Src", 1)
	dst := kb.table(t, "Dst", 0)
	job := consistency.ArchiveEntityJob{Source: src.Name(), PartitionKey: "user00", RowKey: "000000", TargetTable: dst.Name()}
	if err := consistency.EnqueueArchiveEntity(kb.ctx, kb.client, job); err != nil {
		t.Fatal(err)
	}
}

// -metrics-addr: the worker's metrics, the retries' and the process's are scraped from
// the Prometheus endpoint while the archiver runs; nothing of the account's key is there.
func TestBinaryServesPrometheusMetrics(t *testing.T) {
	t.Parallel()
	kb := newKillBed(t)
	archiveEntityJob(t, kb)
	p := start(t, binary(t), nil, "run", "-allow-any", "-queue", kb.queue, "-metrics-addr", "127.0.0.1:0")
	endpoint := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/metrics`)
	p.waitFor(t, "the metrics endpoint", func() bool { return endpoint.MatchString(p.stderr.String()) })
	url := endpoint.FindString(p.stderr.String())
	var body string
	scrape := func() string {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatalf("scrape: %v", err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("scrape: %d %v", resp.StatusCode, err)
		}
		return string(b)
	}
	processed := regexp.MustCompile(`(?m)^tablepatterns_queueworker_messages_processed_total\{[^}]*messaging_destination_name="` + kb.queue + `"[^}]*\} 1$`)
	p.waitFor(t, "the processed job in the scrape", func() bool { body = scrape(); return processed.MatchString(body) })
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^tablepatterns_queueworker_in_flight\{[^}]*messaging_destination_name="` + kb.queue + `"`),
		regexp.MustCompile(`(?m)^tablepatterns_queueworker_handler_duration_seconds_count\{[^}]*tablepatterns_message_kind="` + consistency.KindArchiveEntity + `"[^}]*tablepatterns_outcome="ok"[^}]*\} 1$`),
		regexp.MustCompile(`(?m)^tablepatterns_retry_attempts_total\{[^}]*tablepatterns_outcome="success"`),
		regexp.MustCompile(`(?m)^target_info\{[^}]*service_name="archiver"`),
		regexp.MustCompile(`(?m)^go_goroutines `),
	} {
		if !want.MatchString(body) {
			t.Errorf("the scrape has no %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, accountKey(t)) || strings.Contains(body, "AccountKey") {
		t.Error("the scrape holds the account key")
	}
	if err := p.term(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.stderr.String())
	}
	if strings.Contains(p.stderr.String(), accountKey(t)) {
		t.Error("the logs hold the account key")
	}
	if _, err := http.Get(url); err == nil {
		t.Error("the metrics endpoint still answers after the archiver stopped")
	}
}

// otlpReceiver is an OTLP/HTTP receiver on loopback that keeps what it is sent.
type otlpReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	traces  []*coltrace.ExportTraceServiceRequest
	metrics []*colmetrics.ExportMetricsServiceRequest
	raw     [][]byte
}

func newReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, err := io.ReadAll(req.Body)
		if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.raw = append(r.raw, b)
		switch req.URL.Path {
		case "/v1/traces":
			var m coltrace.ExportTraceServiceRequest
			if err := proto.Unmarshal(b, &m); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.traces = append(r.traces, &m)
			out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
			_, _ = w.Write(out)
		case "/v1/metrics":
			var m colmetrics.ExportMetricsServiceRequest
			if err := proto.Unmarshal(b, &m); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.metrics = append(r.metrics, &m)
			out, _ := proto.Marshal(&colmetrics.ExportMetricsServiceResponse{})
			_, _ = w.Write(out)
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *otlpReceiver) counts() (traces, metrics int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.traces), len(r.metrics)
}

// attr returns the string value of the attribute key among attrs.
func attr(attrs []*commonpb.KeyValue, key string) string {
	for _, kv := range attrs {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// checkResource fails t if res lacks the archiver's service name or holds a credential.
func checkResource(t *testing.T, res *resourcepb.Resource, key string) {
	t.Helper()
	if got := attr(res.GetAttributes(), "service.name"); got != "archiver" {
		t.Errorf("resource service.name %q, want archiver", got)
	}
	for _, kv := range res.GetAttributes() {
		if v := fmt.Sprint(kv.Value); strings.Contains(v, key) || strings.Contains(v, "AccountKey") {
			t.Errorf("resource attribute %s holds a credential", kv.Key)
		}
	}
}

// -otel otlp: with the periodic exports set to ten minutes, the spans of an archive job
// and the worker's and retries' metrics reach the OTLP receiver only because SIGTERM
// flushes them on exit; the job's span has the Azure SDK's request spans as children,
// and no export holds the account key.
func TestBinaryExportsOTLPAndFlushesOnSIGTERM(t *testing.T) {
	t.Parallel()
	kb := newKillBed(t)
	tb := kb.table(t, "Day", 20)
	container := testenv.ContainerName(t)
	if err := tablearchive.EnqueueArchiveTable(kb.ctx, kb.client, tablearchive.ArchiveTableJob{Table: tb.Name(), Container: container, Sealed: true}); err != nil {
		t.Fatal(err)
	}
	recv := newReceiver(t)
	p := start(t, binary(t), []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL,
		"OTEL_BSP_SCHEDULE_DELAY=600000",     // ms: no batch of spans leaves before the exit
		"OTEL_METRIC_EXPORT_INTERVAL=600000", // ms: no metrics either
		"OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=test",
	}, "run", "-allow-any", "-queue", kb.queue, "-otel", "otlp")
	p.waitFor(t, "the archive job", func() bool { return strings.Contains(p.stderr.String(), "table archived") })
	if tr, me := recv.counts(); tr != 0 || me != 0 {
		t.Fatalf("exports before the exit: %d trace and %d metric requests (the test's intervals did not apply)", tr, me)
	}
	if err := p.term(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.stderr.String())
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if len(recv.traces) == 0 || len(recv.metrics) == 0 {
		t.Fatalf("after SIGTERM the receiver got %d trace and %d metric requests, want both flushed\n%s", len(recv.traces), len(recv.metrics), p.stderr.String())
	}
	key := accountKey(t)
	for _, b := range recv.raw {
		if strings.Contains(string(b), key) || strings.Contains(string(b), "AccountKey") {
			t.Fatal("an OTLP export holds the account key")
		}
	}
	var spans []*tracepb.Span
	for _, req := range recv.traces {
		for _, rs := range req.ResourceSpans {
			checkResource(t, rs.Resource, key)
			if got := attr(rs.Resource.GetAttributes(), "deployment.environment.name"); got != "test" {
				t.Errorf("OTEL_RESOURCE_ATTRIBUTES ignored: deployment.environment.name %q", got)
			}
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
	}
	var job *tracepb.Span
	for _, s := range spans {
		if s.Name == "consistency.archive_table" && attr(s.Attributes, "tablepatterns.table") == tb.Name() {
			job = s
		}
	}
	if job == nil {
		t.Fatalf("no consistency.archive_table span for %s among %d spans", tb.Name(), len(spans))
	}
	parent := map[string]string{}
	for _, s := range spans {
		parent[string(s.SpanId)] = string(s.ParentSpanId)
	}
	under := func(s *tracepb.Span) bool { // s descends from the job's span
		for id := string(s.ParentSpanId); id != ""; id = parent[id] {
			if id == string(job.SpanId) {
				return true
			}
		}
		return false
	}
	requests := 0
	for _, s := range spans {
		if s.Kind == tracepb.Span_SPAN_KIND_CLIENT && string(s.TraceId) == string(job.TraceId) && under(s) {
			requests++
		}
	}
	if requests == 0 {
		t.Error("no Azure SDK request span descends from the job's span")
	}
	names := map[string]bool{}
	for _, req := range recv.metrics {
		for _, rm := range req.ResourceMetrics {
			checkResource(t, rm.Resource, key)
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					names[m.Name] = true
				}
			}
		}
	}
	for _, want := range []string{"tablepatterns.queueworker.handler.duration", "tablepatterns.retry.attempts",
		"tablepatterns.queueworker.messages.processed"} {
		if !names[want] {
			t.Errorf("metric %s not exported; got %v", want, names)
		}
	}
	if strings.Contains(p.stderr.String(), key) {
		t.Error("the logs hold the account key")
	}
}

// A collector that refuses the exports and echoes the exporter's credentials
// (its OTEL_EXPORTER_OTLP_HEADERS token, a signature in the endpoint's query) into its
// answer. The failed flush is logged, and the log holds none of them.
func TestBinaryTelemetryErrorsHoldNoSecrets(t *testing.T) {
	t.Parallel()
	kb := newKillBed(t)
	archiveEntityJob(t, kb) // a job, so that there are spans to export
	var hits sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Store(r.URL.Path, true)
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "refused: Authorization: %s; url %s; sig=SECRETSIG3; AccountKey=SECRETKEY4", r.Header.Get("Authorization"), r.URL)
	}))
	defer srv.Close()
	p := start(t, binary(t), []string{
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=" + srv.URL + "/v1/traces?sig=SECRETSIG1",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=" + srv.URL + "/v1/metrics?sig=SECRETSIG2",
		"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20SECRETTOKEN",
	}, "run", "-drain", "-allow-any", "-queue", kb.queue, "-otel", "otlp")
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("run -drain: %v\n%s", err, p.stderr.String())
	}
	stderr := p.stderr.String()
	for _, path := range []string{"/v1/traces", "/v1/metrics"} {
		if _, ok := hits.Load(path); !ok {
			t.Fatalf("no export reached %s:\n%s", path, stderr)
		}
	}
	if !strings.Contains(stderr, "telemetry") {
		t.Fatalf("the refused exports were not logged:\n%s", stderr)
	}
	for _, secret := range []string{"SECRETSIG1", "SECRETSIG2", "SECRETSIG3", "SECRETKEY4", "SECRETTOKEN", accountKey(t)} {
		if strings.Contains(stderr, secret) {
			t.Errorf("the log holds %s:\n%s", secret, stderr)
		}
	}
}

// An OTLP protocol the archiver does not speak is refused, not ignored.
func TestOTLPProtocolChecked(t *testing.T) {
	t.Parallel()
	for env, ok := range map[string]bool{"": true, "http/protobuf": true, "grpc": false, "http/json": false} {
		for _, name := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"} {
			err := checkProtocol(func(k string) string {
				if k == name {
					return env
				}
				return ""
			})
			if (err == nil) != ok || (err != nil && !strings.Contains(err.Error(), name)) {
				t.Errorf("%s=%q: %v", name, env, err)
			}
		}
	}
}

// -metrics-addr serves an unauthenticated page ("bind to a private address"). An address
// without a host (":9464") would listen on every interface, so it is refused (exit 2, a
// usage error that names the host to give; an operator who wants every interface names
// 0.0.0.0). A job whose kind is forged reaches that page only under the fixed kind
// "unregistered" (queueworker.UnregisteredKind), never as its own text with its control
// characters: the forged kind is scraped from an archiver bound to loopback by name, and
// the wait is for the "unregistered" series.
func TestMetricsAddrWithoutHostIsRefusedAndForgedKindsNeverBecomeLabels(t *testing.T) {
	t.Parallel()
	kb := newKillBed(t)
	bin := binary(t)
	refused := start(t, bin, nil, "run", "-allow-any", "-queue", kb.queue, "-metrics-addr", ":0")
	err := refused.cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(refused.stderr.String(), "every interface") {
		t.Errorf("-metrics-addr :0: %v, stderr %q; want exit 2 naming the every-interface risk", err, refused.stderr.String())
	}
	if endpoint := regexp.MustCompile(`http://[^ "]+/metrics`).FindString(refused.stderr.String()); endpoint != "" {
		t.Errorf("-metrics-addr :0 served %s", endpoint)
	}

	kind := "evil\x1b]0;pwned\x07\x1b[2J"
	if _, err := queueworker.Enqueue(kb.ctx, kb.client, kind, "", map[string]int{"n": 1}, nil); err != nil {
		t.Fatal(err)
	}
	p := start(t, bin, nil, "run", "-allow-any", "-queue", kb.queue, "-metrics-addr", "127.0.0.1:0")
	endpoint := regexp.MustCompile(`http://[^ "]+/metrics`)
	p.waitFor(t, "the metrics endpoint", func() bool { return endpoint.MatchString(p.stderr.String()) })
	u, err := url.Parse(endpoint.FindString(p.stderr.String()))
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(u.Host)
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Errorf("-metrics-addr 127.0.0.1:0 listens on %q", host)
	}
	var body string
	p.waitFor(t, "the forged kind's delivery in the scrape", func() bool {
		resp, err := http.Get("http://127.0.0.1:" + port + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return strings.Contains(body, `tablepatterns_message_kind="`+queueworker.UnregisteredKind+`"`) || strings.Contains(body, `tablepatterns_message_kind="evil`)
	})
	if strings.Contains(body, "\x1b") {
		t.Errorf("the Prometheus page carries a terminal escape from a queued job's kind")
	}
	if strings.Contains(body, `tablepatterns_message_kind="evil`) {
		t.Errorf("the Prometheus page has a series for a forged kind")
	}
}

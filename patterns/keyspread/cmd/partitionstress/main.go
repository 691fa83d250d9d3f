// Command partitionstress is the partition stress test of the Azure Table storage design
// guide ("Designing a scalable partitioning strategy"): it creates a test table, loads
// entities into one partition, drives peak load at that partition with a mix of the
// application's operations (inserts, point reads, range queries, merges, entity group
// transactions) from many workers, and reports the entities per second the partition took
// against the scalability target (500/s in the guide, 2,000/s today) and the error rate.
//
//	go run ./patterns/keyspread/cmd/partitionstress -duration 5s -workers 16 -mix insert=50,get=30,query=10,batch=10
//
// It runs against an embedded, in-memory Azurite on loopback. With -use-env it uses the
// account of AZURE_STORAGE_CONNECTION_STRING instead, but only on loopback (an Azurite
// started by hand): a stress test must never load a shared or production account by
// accident. The guard is in the HTTP transport of the clients the tool builds: every
// request's host must be "localhost" or a loopback address, and every connection must
// reach a loopback address, whatever the connection string says and however the Azure
// SDK reads it. The run is bounded in time (-duration, at most 60 s) and in count (-ops,
// at most 1,000,000), and the table is deleted at the end.
//
// Azurite does not throttle, so by default the figure is the load the application's
// operation mix generates at one partition: if it is above the target, the real service
// would throttle that partition at peak (503 Server Busy, timeouts), and the PartitionKey
// is too coarse (see package keyspread's Advise and Buckets). With -model-rate the tool
// puts a throughput model of the service in front of Azurite (a token bucket per partition
// filled at that many entities/s, the account at ten times that): then the partition
// answers 503 ServerBusy beyond the rate, as the service does, and the tool reports the
// throughput the partition sustained, which is the limit it found.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/azurite"
	"github.com/tablepatterns/tablepatterns/internal/faultproxy"
	"github.com/tablepatterns/tablepatterns/patterns/keyspread"
	"github.com/tablepatterns/tablepatterns/repo"
	"github.com/tablepatterns/tablepatterns/repo/account"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Bounds of the flags: the tool is for loopback tests, not for load-testing accounts.
const (
	maxDuration = 60 * time.Second
	maxOps      = 1_000_000
	maxWorkers  = 64
	maxPreload  = 10_000
)

type config struct {
	Duration  time.Duration
	Ops       int
	Workers   int
	Preload   int
	Partition string
	Mix       string
	Target    float64
	// ModelRate > 0 puts the throughput model in front of the table service: entities/s
	// per partition (the account gets ten times that). ModelBurst is the partition's
	// bucket (0: a tenth of a second of ModelRate, so that the burst barely moves the
	// measured rate).
	ModelRate, ModelBurst float64
}

func main() {
	var cfg config
	useEnv := flag.Bool("use-env", false, "use AZURE_STORAGE_CONNECTION_STRING (loopback endpoints only) instead of an embedded Azurite")
	flag.DurationVar(&cfg.Duration, "duration", 5*time.Second, "how long to drive load (at most 60s)")
	flag.IntVar(&cfg.Ops, "ops", 100_000, "the most operations to run (at most 1,000,000)")
	flag.IntVar(&cfg.Workers, "workers", 16, "concurrent workers (at most 64)")
	flag.IntVar(&cfg.Preload, "preload", 1000, "entities loaded into the partition first (at most 10,000)")
	flag.StringVar(&cfg.Partition, "partition", "Sales", "the PartitionKey under test")
	flag.StringVar(&cfg.Mix, "mix", "insert=50,get=30,query=10,update=5,batch=5", "operation weights: insert, get, query, update, batch")
	flag.Float64Var(&cfg.Target, "target", keyspread.TargetToday, "scalability target of one partition in entities/s (the guide's is 500)")
	flag.Float64Var(&cfg.ModelRate, "model-rate", 0, "throttle like the service: a partition serves this many entities/s (0: off, Azurite never throttles)")
	flag.Float64Var(&cfg.ModelBurst, "model-burst", 0, "entities an idle partition takes at once under -model-rate (0: a tenth of a second of it)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := start(ctx, os.Stdout, *useEnv, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "partitionstress:", err)
		os.Exit(1)
	}
}

func start(ctx context.Context, out io.Writer, useEnv bool, cfg config) error {
	if !useEnv {
		fmt.Fprintln(out, "starting an in-memory Azurite on 127.0.0.1 ...")
		srv, err := azurite.Start(ctx, azurite.Options{})
		if err != nil {
			return err
		}
		defer srv.Close()
		_, err = run(ctx, out, srv.ConnectionString, cfg)
		return err
	}
	connStr := os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
	if connStr == "" {
		return errors.New("-use-env: AZURE_STORAGE_CONNECTION_STRING is not set")
	}
	_, err := run(ctx, out, connStr, cfg)
	return err
}

// Entity is the test entity: an employee-sized row of the partition under test.
type Entity struct {
	PartitionKey string `table:",pk"`
	RowKey       string `table:",rk"`
	FirstName    string `table:"FirstName"`
	LastName     string `table:"LastName"`
	Email        string `table:"Email"`
	Age          int32  `table:"Age"`
	Visits       int64  `table:"Visits"`
}

// run runs the stress test on the account of connStr and prints its report to out.
func run(ctx context.Context, out io.Writer, connStr string, cfg config) (keyspread.StressReport, error) {
	var none keyspread.StressReport
	if err := cfg.validate(); err != nil {
		return none, err
	}
	weights, err := parseMix(cfg.Mix)
	if err != nil {
		return none, err
	}
	var model *faultproxy.Throttle
	if cfg.ModelRate > 0 {
		var stop func()
		connStr, model, stop, err = throttled(connStr, cfg)
		if err != nil {
			return none, err
		}
		defer stop()
	}
	clients, err := account.NewClients(connStr, &repo.ClientOptions{Transport: loopbackTransport()})
	if err != nil {
		return none, err
	}
	// No retries: every throttling answer shows up as an error in the report.
	name := fmt.Sprintf("PartitionStress%d", time.Now().UnixNano()%1e9)
	tb, err := repo.New[Entity](clients.Tables, name, &repo.Options{Retry: retry.NoRetry(), Concurrency: 8})
	if err != nil {
		return none, err
	}
	if err := tb.CreateIfNotExists(ctx); err != nil {
		return none, err
	}
	defer tb.DeleteTable(context.WithoutCancel(ctx))

	// Step 2 of the guide's stress test: load the table so that the target partition holds entities.
	items := make([]*Entity, cfg.Preload)
	for i := range items {
		items[i] = entity(cfg.Partition, fmt.Sprintf("p%07d", i))
	}
	if err := tb.BulkWrite(ctx, items, nil); err != nil {
		return none, fmt.Errorf("preload: %w", err)
	}
	fmt.Fprintf(out, "table %s: %d entities preloaded in partition %q\n", name, cfg.Preload, cfg.Partition)
	if model != nil {
		// The preload was written before the model fills its buckets: the run starts
		// with full buckets, as a partition that was idle.
		model.Reset()
		o := model.Options()
		fmt.Fprintf(out, "throughput model: a partition serves %.0f entities/s (burst %.0f), the account %.0f/s; beyond that 503 ServerBusy\n", o.PartitionRate, o.PartitionBurst, o.AccountRate)
	}

	// Step 3: the application's operations, all aimed at the one partition.
	var counts [len(opNames)]atomic.Int64
	op := func(ctx context.Context, worker, i int) (int, error) {
		k := pick(weights, i)
		counts[k].Add(1)
		return runOp(ctx, tb, cfg, k, i)
	}
	fmt.Fprintf(out, "driving %s at partition %q with %d workers for up to %v or %d operations ...\n", cfg.Mix, cfg.Partition, cfg.Workers, cfg.Duration, cfg.Ops)
	rep, err := keyspread.Stress(ctx, op, cfg.Duration, &keyspread.StressOptions{MaxOps: cfg.Ops, Concurrency: cfg.Workers, Target: cfg.Target})
	if err != nil {
		return rep, err
	}
	// Step 4: the throughput against the partition's target.
	var mix []string
	for k, n := range opNames {
		if c := counts[k].Load(); c > 0 {
			mix = append(mix, fmt.Sprintf("%s %d", n, c))
		}
	}
	fmt.Fprintf(out, "operations: %s\n", strings.Join(mix, ", "))
	fmt.Fprintln(out, rep.String())
	if len(rep.Codes) > 0 {
		codes := make([]string, 0, len(rep.Codes))
		for c, n := range rep.Codes {
			if c == "" {
				c = "transport"
			}
			codes = append(codes, fmt.Sprintf("%s %d", c, n))
		}
		sort.Strings(codes)
		fmt.Fprintf(out, "errors by code: %s\n", strings.Join(codes, ", "))
	}
	guide := "within"
	if rep.EntitiesPerSecond > keyspread.TargetGuide {
		guide = "above"
	}
	fmt.Fprintf(out, "against the guide's %d entities/s (\"Designing a scalable partitioning strategy\"): %s\n", keyspread.TargetGuide, guide)
	if rep.Throttled > 0 {
		fmt.Fprintf(out, "the service shed load (%d operations throttled): the partition's limit is about %.0f entities/s, the rate it sustained\n", rep.Throttled, rep.EntitiesPerSecond)
	}
	if model != nil {
		st := model.Stats()
		fmt.Fprintf(out, "model: %d entities admitted, %d refused (%d requests)\n", st.Total.AdmittedEntities, st.Total.RefusedEntities, st.Total.RefusedRequests)
	}
	return rep, nil
}

func (c config) validate() error {
	switch {
	case c.Duration <= 0 || c.Duration > maxDuration:
		return fmt.Errorf("-duration must be positive and at most %v", maxDuration)
	case c.Ops < 1 || c.Ops > maxOps:
		return fmt.Errorf("-ops must be 1 to %d", maxOps)
	case c.Workers < 1 || c.Workers > maxWorkers:
		return fmt.Errorf("-workers must be 1 to %d", maxWorkers)
	case c.Preload < 1 || c.Preload > maxPreload:
		return fmt.Errorf("-preload must be 1 to %d", maxPreload)
	case c.Partition == "":
		return errors.New("-partition must not be empty")
	case c.Target <= 0:
		return errors.New("-target must be positive")
	case c.ModelRate < 0 || c.ModelBurst < 0:
		return errors.New("-model-rate and -model-burst must not be negative")
	}
	return nil
}

// errNotLoopback is the guard's refusal.
var errNotLoopback = errors.New("only loopback endpoints (an Azurite) are allowed")

// loopbackTransport is the HTTP transport of every client the tool builds. It judges the
// client actually built, not the connection string (which the Azure SDK reads its own way:
// keys are case-sensitive there, a space before '=' makes another key, and
// UseDevelopmentStorage is not a key it knows): each request's host must be "localhost" or
// a loopback IP literal, and each connection must reach a loopback address (a name that
// resolves elsewhere is refused at dial time). No HTTP proxy from the environment is used.
func loopbackTransport() *http.Client {
	dialer := &net.Dialer{
		Timeout: 10 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
				return fmt.Errorf("refusing to connect to %s: %w", address, errNotLoopback)
			}
			return nil
		},
	}
	return &http.Client{Transport: &loopbackGuard{next: &http.Transport{
		Proxy:               nil,
		DialContext:         dialer.DialContext,
		MaxIdleConnsPerHost: maxWorkers,
		IdleConnTimeout:     30 * time.Second,
	}}}
}

// loopbackGuard refuses a request whose URL names a host that is not loopback.
type loopbackGuard struct{ next http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (g *loopbackGuard) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := loopbackHost(r.URL); err != nil {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, err
	}
	return g.next.RoundTrip(r)
}

// loopbackHost checks the host of u: "localhost" or a loopback IP literal.
func loopbackHost(u *url.URL) error {
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to stress %s: %w", host, errNotLoopback)
}

// throttled starts the throughput model (a fault proxy) in front of the table endpoint of
// connStr, which must be an Azurite on loopback, and returns the connection string that
// goes through it.
func throttled(connStr string, cfg config) (string, *faultproxy.Throttle, func(), error) {
	srv, err := azurite.ParseConnectionString(connStr)
	if err != nil {
		return "", nil, nil, err
	}
	u, err := url.Parse(srv.TableURL)
	if err != nil || u.Host == "" {
		return "", nil, nil, errors.New("-model-rate: the connection string has no table endpoint")
	}
	if err := loopbackHost(u); err != nil { // the proxy forwards there
		return "", nil, nil, err
	}
	p, err := faultproxy.New(u.Scheme + "://" + u.Host)
	if err != nil {
		return "", nil, nil, err
	}
	burst := cfg.ModelBurst
	if burst == 0 {
		burst = max(cfg.ModelRate/10, batchSize)
	}
	model, err := p.EmulateThrottling(&faultproxy.ThrottleOptions{PartitionRate: cfg.ModelRate, PartitionBurst: burst, AccountRate: 10 * cfg.ModelRate})
	if err != nil {
		_ = p.Close()
		return "", nil, nil, err
	}
	return srv.ConnectionStringWith(p.URL()+u.Path, "", ""), model, func() { _ = p.Close() }, nil
}

var opNames = [...]string{"insert", "get", "query", "update", "batch"}

const batchSize = 10

func parseMix(mix string) ([len(opNames)]int, error) {
	var w [len(opNames)]int
	total := 0
	for _, part := range strings.Split(mix, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(val)
		k := -1
		for i, o := range opNames {
			if o == name {
				k = i
			}
		}
		if !ok || err != nil || n < 0 || k < 0 {
			return w, fmt.Errorf("-mix: %q is not op=weight with op one of %s", part, strings.Join(opNames[:], ", "))
		}
		w[k] += n
		total += n
	}
	if total == 0 {
		return w, errors.New("-mix: all weights are 0")
	}
	return w, nil
}

// pick chooses operation i's kind by weight, the same for the same i.
func pick(w [len(opNames)]int, i int) int {
	total := 0
	for _, n := range w {
		total += n
	}
	h := fnv.New32a()
	fmt.Fprint(h, i)
	r := int(h.Sum32() % uint32(total))
	for k, n := range w {
		if r < n {
			return k
		}
		r -= n
	}
	return 0
}

func entity(pk, rk string) *Entity {
	return &Entity{PartitionKey: pk, RowKey: rk, FirstName: "Don", LastName: "Hall", Email: "donh@contoso.com", Age: 34}
}

func runOp(ctx context.Context, tb *repo.Table[Entity], cfg config, kind, i int) (int, error) {
	preloaded := fmt.Sprintf("p%07d", i%cfg.Preload)
	switch opNames[kind] {
	case "insert":
		return 1, tb.Insert(ctx, entity(cfg.Partition, fmt.Sprintf("n%09d", i)))
	case "get":
		_, err := tb.Get(ctx, cfg.Partition, preloaded)
		return 1, err
	case "query":
		first := i % max(cfg.Preload-10, 1)
		lo, hi := fmt.Sprintf("p%07d", first), fmt.Sprintf("p%07d", first+10)
		got, err := tb.Collect(ctx, repo.Query{Filter: filter.RowKeyRange(cfg.Partition, lo, hi)})
		return len(got), err
	case "update":
		e := entity(cfg.Partition, preloaded)
		e.Visits = int64(i)
		return 1, tb.Upsert(ctx, e, &repo.UpsertOptions{Mode: repo.Merge, Properties: []string{"Visits"}})
	case "batch":
		actions := make([]repo.Action, batchSize)
		for j := range actions {
			actions[j] = tb.InsertAction(entity(cfg.Partition, fmt.Sprintf("b%09d_%02d", i, j)))
		}
		_, err := repo.Submit(ctx, actions...)
		return batchSize, err
	}
	return 0, nil
}

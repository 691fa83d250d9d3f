package main

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/errs"
	"github.com/tablepatterns/tablepatterns/internal/azurite"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/keyspread"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestStressToolRuns(t *testing.T) {
	var out strings.Builder
	cfg := config{Duration: 20 * time.Second, Ops: 300, Workers: 4, Preload: 50, Partition: "Sales", Mix: "insert=40,get=30,query=10,update=10,batch=10", Target: keyspread.TargetGuide}
	if _, err := run(t.Context(), &out, testenv.ConnectionString(t), cfg); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"50 entities preloaded", "300 ops", "entities/s against a target of 500/s", "error rate 0.00%", "insert ", "batch ", "against the guide's 500 entities/s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// Under the throughput model, the tool finds the modelled partition limit within 10 %.
func TestStressToolFindsTheModelledLimit(t *testing.T) {
	const rate = 20 // entities/s: the published 2,000 scaled down a hundred times, as in the other load tests
	var out strings.Builder
	// Every operation of this mix costs the model one token per entity it reports (a
	// range query would report up to 10 entities for one token).
	// A burst of half a second: it adds at most 10 entities to 8 s of 20/s (6 %), and
	// saves the tokens of short pauses when a loaded machine stalls every worker at once.
	cfg := config{Duration: 8 * time.Second, Ops: maxOps, Workers: 32, Preload: 50, Partition: "Sales",
		Mix: "insert=50,get=30,update=10,batch=10", Target: keyspread.TargetToday, ModelRate: rate, ModelBurst: rate / 2}
	rep, err := run(t.Context(), &out, testenv.ConnectionString(t), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log(out.String())
	if rep.Throttled == 0 || rep.Codes["ServerBusy"] == 0 {
		t.Fatalf("the model never throttled: %+v", rep)
	}
	if math.Abs(rep.EntitiesPerSecond-rate) > 0.1*rate {
		t.Fatalf("the tool found %.0f entities/s, want %d ± 10 %%", rep.EntitiesPerSecond, rate)
	}
	for _, want := range []string{"throughput model: a partition serves 20 entities/s (burst 10)", "the partition's limit is about", "THROTTLED: the service shed load", "errors by code: ServerBusy"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestStressToolRefuses(t *testing.T) {
	t.Parallel()
	ok := config{Duration: time.Second, Ops: 10, Workers: 1, Preload: 1, Partition: "P", Mix: "insert=1", Target: 500}
	bad := map[string]func(c *config){
		"duration": func(c *config) { c.Duration = 2 * maxDuration },
		"ops":      func(c *config) { c.Ops = maxOps + 1 },
		"workers":  func(c *config) { c.Workers = maxWorkers + 1 },
		"preload":  func(c *config) { c.Preload = 0 },
		"mix":      func(c *config) { c.Mix = "delete=1" },
		"zero mix": func(c *config) { c.Mix = "insert=0" },
		"model":    func(c *config) { c.ModelRate = -1 },
	}
	for name, change := range bad {
		c := ok
		change(&c)
		if _, err := run(t.Context(), &strings.Builder{}, testenv.ConnectionString(t), c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The tool never stresses a remote account: each string below looks like loopback to a
// lenient parser (azurite.ParseConnectionString) while it names a remote account, or names
// both. Either the connection-string parser refuses it as ambiguous before anything is
// sent (errs.ErrInvalidInput), or the guard, which judges the client actually built,
// refuses the remote host.
func TestStressToolRefusesRemoteAccounts(t *testing.T) {
	t.Parallel()
	key := azurite.DevAccountKey
	loop := "http://127.0.0.1:10002/devstoreaccount1"
	cases := map[string]string{
		"remote":                "DefaultEndpointsProtocol=https;AccountName=prod;AccountKey=" + key + ";EndpointSuffix=core.windows.net",
		"duplicate key in case": "AccountName=prod;AccountKey=" + key + ";TableEndpoint=https://prod.table.core.windows.net;tableendpoint=" + loop,
		"dev storage + suffix":  "UseDevelopmentStorage=true;AccountName=prod;AccountKey=" + key + ";EndpointSuffix=core.windows.net",
		"localhost lookalike":   "AccountName=prod;AccountKey=" + key + ";TableEndpoint=http://localhost.prod.example:10002/prod",
		"loopback in userinfo":  "AccountName=prod;AccountKey=" + key + ";TableEndpoint=http://127.0.0.1@prod.table.core.windows.net/",
	}
	fooled := map[string]bool{"duplicate key in case": true, "dev storage + suffix": true}
	ok := config{Duration: time.Second, Ops: 10, Workers: 1, Preload: 1, Partition: "P", Mix: "insert=1", Target: 500}
	for name, cs := range cases {
		if fooled[name] {
			// The lenient parser sees loopback: the bypass this test closes.
			s, err := azurite.ParseConnectionString(cs)
			if err != nil || !strings.HasPrefix(s.TableURL, "http://127.0.0.1:") {
				t.Errorf("%s: the case does not fool the lenient parser (%v): fix the test", name, err)
			}
		}
		_, err := run(t.Context(), &strings.Builder{}, cs, ok)
		if !errors.Is(err, errNotLoopback) && !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("%s: err = %v, want a refusal before any request (the parser's or the loopback guard's)", name, err)
		}
		if err != nil && strings.Contains(err.Error(), key) {
			t.Errorf("%s: the error carries the account key", name)
		}
	}
	// The model's proxy forwards to the parsed endpoint: it must be loopback too.
	m := ok
	m.ModelRate = 100
	if _, err := run(t.Context(), &strings.Builder{}, cases["remote"], m); !errors.Is(err, errNotLoopback) {
		t.Errorf("-model-rate on a remote account: %v", err)
	}
}

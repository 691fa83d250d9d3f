package main

import (
	"strings"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/keyspread"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestStressToolRuns(t *testing.T) {
	var out strings.Builder
	cfg := config{Duration: 20 * time.Second, Ops: 300, Workers: 4, Preload: 50, Partition: "Sales", Mix: "insert=40,get=30,query=10,update=10,batch=10", Target: keyspread.TargetGuide}
	if err := run(t.Context(), &out, testenv.ConnectionString(t), cfg); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"50 entities preloaded", "300 ops", "entities/s against a target of 500/s", "error rate 0.00%", "insert ", "batch ", "against the guide's 500 entities/s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestStressToolRefuses(t *testing.T) {
	t.Parallel()
	ok := config{Duration: time.Second, Ops: 10, Workers: 1, Preload: 1, Partition: "P", Mix: "insert=1", Target: 500}
	remote := "DefaultEndpointsProtocol=https;AccountName=prod;AccountKey=a2V5;EndpointSuffix=core.windows.net"
	if err := run(t.Context(), &strings.Builder{}, remote, ok); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("a remote account was not refused: %v", err)
	}
	bad := map[string]func(c *config){
		"duration": func(c *config) { c.Duration = 2 * maxDuration },
		"ops":      func(c *config) { c.Ops = maxOps + 1 },
		"workers":  func(c *config) { c.Workers = maxWorkers + 1 },
		"preload":  func(c *config) { c.Preload = 0 },
		"mix":      func(c *config) { c.Mix = "delete=1" },
		"zero mix": func(c *config) { c.Mix = "insert=0" },
	}
	for name, change := range bad {
		c := ok
		change(&c)
		if err := run(t.Context(), &strings.Builder{}, testenv.ConnectionString(t), c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

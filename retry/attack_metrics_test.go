package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// Errors that carry a SAS signature, an account key, a URL query, entity keys and
// unbounded text (messages of any length, codes nobody defined), on operations whose
// Resource and keys come from untrusted jobs: the attempt and wait metrics must carry only
// the operation's constant name and the fixed reason and outcome values, and their series
// must stay bounded however many distinct errors and resources pass.
func TestAttackMetricsAttributesBounded(t *testing.T) {
	t.Parallel()
	mp, r := manual(t)
	reasons := map[string]bool{ReasonNone: true, ReasonThrottled: true, ReasonTimeout: true, ReasonReset: true, ReasonUnreachable: true,
		ReasonServerError: true, ReasonConflict: true, ReasonPrecondition: true, ReasonNotFound: true, ReasonClientError: true,
		ReasonCanceled: true, ReasonUnknown: true, ReasonOther: true}
	outcomes := map[string]bool{outcomeSuccess: true, outcomeRetried: true, outcomeFailed: true, outcomeExhausted: true, outcomeInterrupted: true}
	for i := range 200 {
		p := fastPolicy(2, nil)
		p.MeterProvider = mp
		op := Op{Name: "insert", Resource: fmt.Sprintf("jobTable%d?sig=SECRET%d", i, i), PartitionKey: fmt.Sprintf("pk%d", i), RowKey: fmt.Sprintf("rk%d", i)}
		var e error
		switch i % 5 {
		case 0:
			e = responseError(t, 400+i%99, fmt.Sprintf("Code%dAccountKey=SECRET", i))
		case 1:
			e = fmt.Errorf("GET https://acct.blob.core.windows.net/c/b%d?sv=1&sig=SECRET%d: %w", i, i, errs.ErrTransient)
		case 2:
			e = responseError(t, 500+i%11, strings.Repeat("x", i))
		case 3:
			e = errors.New(strings.Repeat("secret text ", i))
		case 4:
			e = fmt.Errorf("%w: key %d", errs.ErrOutcomeUnknown, i)
		}
		_ = Do(context.Background(), p, op, func(context.Context, int) error { return e })
	}
	rm := collect(t, r)
	attempts := find(t, rm, MetricAttempts)
	sum := attempts.Data.(metricdata.Sum[int64])
	for _, dp := range sum.DataPoints {
		for _, kv := range dp.Attributes.ToSlice() {
			v := kv.Value.Emit()
			switch string(kv.Key) {
			case "tablepatterns.operation":
				if v != "insert" {
					t.Errorf("operation %q", v)
				}
			case string(keyReason):
				if !reasons[v] {
					t.Errorf("reason %q is not a Reason constant", v)
				}
			case "tablepatterns.outcome":
				if !outcomes[v] {
					t.Errorf("outcome %q", v)
				}
			default:
				t.Errorf("unexpected attribute %s=%q", kv.Key, v)
			}
		}
	}
	if n := len(sum.DataPoints); n > len(reasons)*len(outcomes) {
		t.Errorf("%d attempt series for one operation", n)
	}
}

// Do's decisions (attempts made, error returned) are the same with no provider, a no-op
// provider, an SDK provider, and a provider of a type that is not comparable.
func TestAttackMetricsDoSameDecisions(t *testing.T) {
	t.Parallel()
	mp, _ := manual(t)
	type result struct {
		attempts int
		err      string
		kind     string
	}
	run := func(p Policy, fail func(int) error) result {
		n := 0
		err := Do(context.Background(), p, testOp, func(_ context.Context, a int) error { n = a; return fail(a) })
		s := ""
		if err != nil {
			s = err.Error()
		}
		return result{n, s, fmt.Sprintf("%T", err)}
	}
	scenarios := []func(int) error{
		func(a int) error { return responseError(t, http.StatusServiceUnavailable, "ServerBusy") },
		func(a int) error {
			if a < 3 {
				return responseError(t, http.StatusInternalServerError, "InternalError")
			}
			return nil
		},
		func(a int) error { return responseError(t, http.StatusConflict, "EntityAlreadyExists") },
	}
	providers := map[string]Policy{"nil": fastPolicy(4, nil)}
	sdk := fastPolicy(4, nil)
	sdk.MeterProvider = mp
	providers["sdk"] = sdk
	nc := fastPolicy(4, nil)
	nc.MeterProvider = uncomparable{metricMP: mp, tags: []string{"x"}}
	providers["uncomparable"] = nc
	for i, f := range scenarios {
		var base *result
		for name, p := range providers {
			got := run(p, f)
			if base == nil {
				base = &got
				continue
			}
			if !reflect.DeepEqual(got, *base) {
				t.Errorf("scenario %d, provider %s: %+v, another provider %+v", i, name, got, *base)
			}
		}
	}
}

// uncomparable is a MeterProvider whose dynamic type cannot be compared with ==.
type uncomparable struct {
	metricMP
	tags []string
}

type metricMP = metric.MeterProvider

// NaN is not a fraction or a factor: NewGate must refuse it as it refuses 0 < Cut < 1
// violations. Accepted, a NaN Cut makes the limit NaN once the service throttles: the Gate
// then limits nothing (or never lifts), whatever the throttling.
func TestAttackGateNaNOptions(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	for name, o := range map[string]GateOptions{"Cut": {Cut: nan}, "Raise": {Raise: nan}, "Threshold": {Threshold: nan}} {
		g, err := NewGate(&o)
		if err != nil {
			continue
		}
		c := &fakeClock{t: time.Unix(1_000_000, 0)}
		g.now = c.now
		var waits time.Duration
		for range 50 {
			waits += max(g.reserve(), 0)
			g.Observe(true)
			c.add(10 * time.Millisecond)
		}
		t.Errorf("NewGate accepted %s NaN; after 50 throttled answers: rate %v, total wait %v", name, g.Rate(), waits)
	}
}

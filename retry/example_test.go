package retry_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/cenkalti/backoff/v4"

	"github.com/tablepatterns/tablepatterns/retry"
)

// serverBusy is what the service answers while it moves a partition.
func serverBusy() error {
	return runtime.NewResponseError(&http.Response{
		StatusCode: http.StatusServiceUnavailable,
		Status:     "503 Server Busy",
		Header:     http.Header{"X-Ms-Error-Code": {"ServerBusy"}},
		Body:       io.NopCloser(bytes.NewReader(nil)),
	})
}

func ExampleDo() {
	// Short waits for the example; the zero Policy uses the documented defaults.
	p := retry.Policy{Delay: time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
	op := retry.Op{Name: "insert", Resource: "EmployeeExpense", PartitionKey: "empid", RowKey: "000123"}

	err := retry.Do(context.Background(), p, op, func(ctx context.Context, attempt int) error {
		fmt.Println("attempt", attempt)
		if attempt < 3 {
			return serverBusy()
		}
		return nil
	})
	fmt.Println("error:", err)

	p.MaxRetries = 1
	err = retry.Do(context.Background(), p, op, func(ctx context.Context, attempt int) error {
		return serverBusy()
	})
	fmt.Println(errors.Is(err, retry.ErrTransient), err)
	// Output:
	// attempt 1
	// attempt 2
	// attempt 3
	// error: <nil>
	// true tablepatterns: insert EmployeeExpense (PartitionKey="empid", RowKey="000123"): gave up after 2 attempts: RESPONSE 503 ServerBusy
}

func ExampleIsTransient() {
	fmt.Println(retry.IsTransient(serverBusy()))
	fmt.Println(retry.IsTransient(context.Canceled))
	// Output:
	// true
	// false
}

// NewBackOff plugs the formula into cenkalti/backoff's own helpers.
func ExamplePolicy_NewBackOff() {
	p := retry.Policy{Delay: time.Millisecond, MinDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, MaxRetries: 3}
	calls := 0
	err := backoff.Retry(func() error {
		calls++
		if calls < 3 {
			return serverBusy()
		}
		return nil
	}, backoff.WithContext(p.NewBackOff(), context.Background()))
	fmt.Println(calls, err)
	// Output: 3 <nil>
}

// Schedule runs one task per transaction, spread over partitions: here six chunks of two
// partitions, with one at a time in a partition, so that each partition's chunks run in
// order while the other partition's go on.
func ExampleSchedule() {
	chunks := []string{"Sales", "Sales", "Sales", "HR", "HR", "HR"} // the partition of each chunk
	var mu sync.Mutex
	done := map[string][]int{}
	err := retry.Schedule(context.Background(), chunks, &retry.ScheduleOptions{Concurrency: 4, PartitionConcurrency: 1},
		func(ctx context.Context, i int) error {
			p, _ := retry.PartitionOf(ctx) // the Gate reads it: a busy partition slows itself only
			mu.Lock()
			defer mu.Unlock()
			done[p] = append(done[p], i)
			return nil
		})
	fmt.Println(done["Sales"], done["HR"], err)
	// Output: [0 1 2] [3 4 5] <nil>
}

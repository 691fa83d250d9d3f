package queueworker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
)

// CreateQueueIfNotExists creates the job queue and its poison queue, and an existing
// queue is success, so that a program can call it at every start; names the service
// would refuse are refused before any request.
func TestCreateQueueIfNotExistsCreatesQueueAndPoisonQueue(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	svc := testenv.QueueService(t)
	name := testenv.QueueName(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = svc.NewQueueClient(name).Delete(ctx, nil)
		_, _ = svc.NewQueueClient(name+PoisonSuffix).Delete(ctx, nil)
	})
	for range 2 {
		if err := CreateQueueIfNotExists(ctx, svc, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{name, name + PoisonSuffix} {
		if _, err := svc.NewQueueClient(q).GetProperties(ctx, nil); err != nil {
			t.Fatalf("queue %s: %v", q, err)
		}
	}
	c, err := NewClient(svc.NewQueueClient(name), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Enqueue(ctx, c, "job", "", map[string]int{"n": 1}, nil); err != nil {
		t.Fatalf("enqueue on the created queue: %v", err)
	}
	long := "q12345678901234567890123456789012345678901234567890123456789"
	for _, bad := range []string{"", "Bad_Queue", long} {
		if err := CreateQueueIfNotExists(ctx, svc, bad, nil); !errors.Is(err, errs.ErrInvalidInput) {
			t.Errorf("CreateQueueIfNotExists(%q): %v, want ErrInvalidInput", bad, err)
		}
	}
	if err := CreateQueueIfNotExists(ctx, nil, name, nil); !errors.Is(err, errs.ErrInvalidInput) {
		t.Errorf("nil service: %v, want ErrInvalidInput", err)
	}
}

package repo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/tablepatterns/tablepatterns/internal/fanout"
	"github.com/tablepatterns/tablepatterns/retry"
)

// GetMany reads the entities with the given keys (PartitionKey, RowKey pairs) with bounded
// parallel point queries, at most Options.Concurrency at a time: the lookup step of the
// index patterns. out[i] is the entity of keys[i]; found[i] is false for a key with no
// entity (not an error).
//
// Errors: ErrInvalidInput (a key; nothing sent), the first other failure, as Get.
func (t *Table[T]) GetMany(ctx context.Context, keys [][2]string) (out []T, found []bool, err error) {
	for _, k := range keys {
		if err := checkAddressable(k[0], k[1]); err != nil {
			return nil, nil, err
		}
	}
	out, found = make([]T, len(keys)), make([]bool, len(keys))
	err = fanout.Do(ctx, len(keys), t.opts.Concurrency, func(ctx context.Context, i int) error {
		v, err := t.Get(ctx, keys[i][0], keys[i][1])
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		out[i], found[i] = v, true
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, found, nil
}

// QueryParallel runs several queries at once, at most Options.Concurrency at a time, and
// returns each query's entities in the order of qs (the Azure Table storage design guide, "asynchronous and parallel
// operations": for example one query per partition, merged by the caller). The first
// failure cancels the others.
//
// Errors: the first query's error, as Pager.Next.
func (t *Table[T]) QueryParallel(ctx context.Context, qs []Query) ([][]T, error) {
	for i := range qs {
		if err := qs[i].validate(); err != nil {
			return nil, err
		}
	}
	out := make([][]T, len(qs))
	err := fanout.Do(ctx, len(qs), t.opts.Concurrency, func(ctx context.Context, i int) error {
		var err error
		out[i], err = t.Collect(ctx, qs[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// BulkMode selects the write BulkWrite uses for every entity.
type BulkMode int

const (
	// BulkUpsert replaces each entity or inserts it (the default; idempotent, so a rerun
	// of a half-done bulk write is safe).
	BulkUpsert BulkMode = iota
	// BulkMerge merges each entity or inserts it.
	BulkMerge
	// BulkInsert inserts each entity; existing ones fail with ErrAlreadyExists in their
	// own slot of the BulkError, without stopping the others.
	BulkInsert
)

// BulkOptions configures BulkWrite. nil means the zero value.
type BulkOptions struct {
	// Mode is the write applied to each entity. Defaults to BulkUpsert.
	Mode BulkMode
}

// BulkError reports the entities of a BulkWrite that were not written.
type BulkError struct {
	// Errors has one slot per input entity: nil if it was written.
	Errors []error
	// Failed counts the non-nil slots.
	Failed int
}

// Error implements error.
func (e *BulkError) Error() string {
	for i, err := range e.Errors {
		if err != nil {
			return fmt.Sprintf("tablepatterns: bulk write: %d of %d entities not written; first: entity %d: %v", e.Failed, len(e.Errors), i, err)
		}
	}
	return "tablepatterns: bulk write failed"
}

// Unwrap returns the per-entity errors, so errors.Is(err, ErrAlreadyExists) tells whether
// any entity met that condition.
func (e *BulkError) Unwrap() []error {
	var out []error
	for _, err := range e.Errors {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// BulkWrite writes any number of entities, NOT atomically: it groups them by partition,
// sends each group as entity group transactions of up to MaxTransactionActions entities
// under MaxTransactionBytes, and runs up to Options.Concurrency transactions at once
// spread over the partitions, at most Options.PartitionConcurrency in one partition
// (retry.Schedule; Tablestore's primary key design guide: spread writes over partitions
// in parallel). A partition the service throttles slows only its own transactions (see
// retry.Gate). Each entity
// either is written or has its own error: when one action of a chunk fails, the rest of
// the chunk is sent again without it. Two entities with the same keys are refused
// (ErrInvalidInput in the second one's slot).
//
// On success each value's ETag field holds its new ETag.
//
// Errors: nil, or a *BulkError with one slot per entity; ctx errors.
func (t *Table[T]) BulkWrite(ctx context.Context, items []*T, opts *BulkOptions) error {
	if opts == nil {
		opts = &BulkOptions{}
	}
	results := make([]error, len(items))
	actions := make([]Action, len(items))
	byPartition := map[string][]int{}
	seen := map[[2]string]int{}
	for i, v := range items {
		switch opts.Mode {
		case BulkInsert:
			actions[i] = t.InsertAction(v)
		case BulkMerge:
			actions[i] = t.UpsertAction(v, &UpsertOptions{Mode: Merge})
		default:
			actions[i] = t.UpsertAction(v, nil)
		}
		w := &actions[i].w
		if w.err != nil {
			results[i] = w.err
			continue
		}
		k := [2]string{w.pk, w.rk}
		if j, dup := seen[k]; dup {
			results[i] = &InvalidInputError{Field: "entity", Reason: fmt.Sprintf("has the same keys as entity %d of this bulk write", j)}
			continue
		}
		seen[k] = i
		byPartition[w.pk] = append(byPartition[w.pk], i)
	}
	chunks := chunkPartitions(byPartition, actions)
	parts := make([]string, len(chunks))
	for c, chunk := range chunks {
		parts[c] = actions[chunk[0]].w.pk
	}
	var mu sync.Mutex
	sched := &retry.ScheduleOptions{Concurrency: t.opts.Concurrency, PartitionConcurrency: t.opts.PartitionConcurrency}
	err := retry.Schedule(ctx, parts, sched, func(ctx context.Context, c int) error {
		res := submitChunk(ctx, actions, chunks[c])
		mu.Lock()
		defer mu.Unlock()
		for i, err := range res {
			results[i] = err
		}
		return ctx.Err()
	})
	if err != nil {
		return err
	}
	be := &BulkError{Errors: results}
	for _, err := range results {
		if err != nil {
			be.Failed++
		}
	}
	if be.Failed == 0 {
		return nil
	}
	return be
}

// chunkPartitions splits each partition's entities into transactions within the limits,
// in a deterministic order (partition by partition: retry.Schedule spreads them).
func chunkPartitions(byPartition map[string][]int, actions []Action) [][]int {
	pks := make([]string, 0, len(byPartition))
	for pk := range byPartition {
		pks = append(pks, pk)
	}
	sort.Strings(pks)
	// Leave room for the multipart framing and URLs of each action.
	const budget = MaxTransactionBytes - 512<<10
	var chunks [][]int
	for _, pk := range pks {
		var cur []int
		size := 0
		for _, i := range byPartition[pk] {
			n := len(actions[i].w.body) + 1024
			if len(cur) == MaxTransactionActions || (len(cur) > 0 && size+n > budget) {
				chunks = append(chunks, cur)
				cur, size = nil, 0
			}
			cur = append(cur, i)
			size += n
		}
		if len(cur) > 0 {
			chunks = append(chunks, cur)
		}
	}
	return chunks
}

// submitChunk submits one chunk; when an action fails, it records that action's error and
// resubmits the others, so every entity ends written or with its own error.
func submitChunk(ctx context.Context, actions []Action, idx []int) map[int]error {
	res := make(map[int]error, len(idx))
	pending := append([]int(nil), idx...)
	for len(pending) > 0 {
		batch := make([]Action, len(pending))
		for j, i := range pending {
			batch[j] = actions[i]
		}
		_, err := Submit(ctx, batch...)
		if err == nil {
			for _, i := range pending {
				res[i] = nil
			}
			return res
		}
		var ae *ActionError
		if !errors.As(err, &ae) || ae.Index < 0 || ae.Index >= len(pending) {
			for _, i := range pending {
				res[i] = err
			}
			return res
		}
		res[pending[ae.Index]] = err
		pending = append(pending[:ae.Index:ae.Index], pending[ae.Index+1:]...)
	}
	return res
}

package consistency

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/fanout"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Companion is a pattern that keeps copies of a table's entities: an index (the index
// rows of package secondaryindex, the index entities of package indexentity) or any other
// pattern whose copies must not outlive an entity that the archive moves away. It is the
// one relation between the archive and the other patterns: an archive move (single or
// batched) asks every Companion of the source table (Options.Companions) what removing an
// entity means to it, so that a new pattern plugs in by implementing Companion, without a
// change to this package.
type Companion interface {
	// Removal is asked, for entity e as the archive read it from the source table (its
	// ETag set), what to do with the copies of e when e leaves the table. The archive asks
	// after reading e and before writing e's archive copy, so that a refusal leaves
	// nothing written. It reads what it needs and sends no write. It may be asked again
	// for the same entity (a restarted move, a redelivered job, a later round of a
	// batched move whose entities share a copy: see the package documentation, "Range
	// archives"); each answer must stand on its own. It may be called from several
	// goroutines at once (a batched move runs up to 8 batches at once). e is read back
	// from storage: untrusted input.
	//
	// An error stops the move before anything is written. One that wraps
	// errs.ErrInvalidInput (e is not an entity whose copies the companion can find: it
	// does not decode, its keys or indexed values are ones no write of the pattern
	// stores, or it is one of the copies itself) is permanent: the worker moves the job
	// to the poison queue for an operator, instead of archiving e and leaving copies
	// that lookups still find.
	Removal(ctx context.Context, e *codec.Entity) (Removal, error)
}

// Removal is what a Companion needs done when an entity leaves its table. The zero
// Removal asks for nothing: the entity has no copy.
type Removal struct {
	// Actions are writes in e's partition of the source table: deletes or updates of the
	// companion's copies, each conditional on the ETag the companion read. They commit in
	// one entity group transaction with the conditional delete of e: both land or neither
	// does, and a copy that changed after the read fails the transaction, which makes the
	// move start over. They count against repo.MaxTransactionActions together with the
	// delete of e (and, in a batched move, with the other entities of the batch). One
	// transaction is sent through one client and names one table: build them on the
	// Archiver's clients (account.Clients.Tables), on the table spelled as
	// Options.Companions spells it (the move's delete takes that spelling, whatever the
	// job's). The move checks the transaction (repo.CheckTransaction: count, one table as
	// spelled, one partition, one action per row, size) before it writes the archive
	// copy: one that cannot commit is refused with ErrInvalidInput (permanent) and
	// nothing is written.
	Actions []repo.Action
	// Before, if set, runs before the delete of e is sent: the durable first step for
	// copies that live in other partitions or tables (an enqueue of the reconciliation
	// that removes them once e is gone). It must be idempotent, and harmless when the
	// delete does not follow (a reconciliation that still finds e keeps its copies). The
	// Before hooks of one delete step (in a batched move, those of every entity of its
	// transaction) run up to 16 at once.
	Before func(ctx context.Context) error
	// Within, if positive, bounds Before and the delete together, as the Settle/2
	// protocol of the eventually consistent patterns does: the archive takes one deadline,
	// Within from the moment before it calls the first Before, and gives it to the Before
	// hooks and to the delete's request. A delete that could not be sent in time is not
	// sent (or is abandoned) and the move starts over from fresh reads, so that a
	// reconciliation Before enqueued to run after the delete cannot run before it. The
	// shortest Within of the removals of the entities one delete step removes wins (one
	// entity's; in a batched move, those of every entity of the delete transaction). 0
	// means no bound.
	Within time.Duration
	// After, if set, runs once the delete of e has landed (in a batched move, once the
	// transaction that deleted e committed; up to 16 at once): a prompt step that a stop
	// can skip (a reconciliation visible at once, where Before's waits out its delay). It
	// also runs when the move cannot tell whether its delete landed (a lost response: the
	// outcome is unknown) or finds e already gone (404): After must therefore be
	// harmless when e is still there. When the Removal has a Before, After's error is
	// logged, not returned: Before already covers what After hastens. Without a Before,
	// After is the only step that removes the copies: its error (after a delete that
	// landed, or one that found e gone) fails the move, so that the job runs again; a rerun that finds e gone asks
	// the companions that implement Sweeper.
	After func(ctx context.Context) error
}

// Sweeper is implemented by a Companion whose copies of an entity are removed by a step
// that a move can miss: a Removal whose After is the only step (no Before), and whose
// move stopped, or lost the delete's response, between the delete and After. A move that
// finds the entity gone from the source and its archive copy written (a rerun:
// OutcomeAlreadyArchived) calls Gone for each such companion of the source table, so
// that the copies do not outlive the entity forever.
type Sweeper interface {
	Companion
	// Gone is called with the keys of an entity that a move found already gone from the
	// table and archived. It must be idempotent and harmless when the entity is back (a
	// reconciliation that re-reads the table). Its error fails the move (the job runs
	// again). The keys come from the job: they are valid keys, not read from storage.
	Gone(ctx context.Context, pk, rk string) error
}

// errMoveStepFailed is wrapped by the error of a move whose delete landed but whose
// companion's After, the only step that removes the copies (no Before), failed.
var errMoveStepFailed = errors.New("consistency: the entity was moved, but its companion's step that removes its copies failed (the job must run again)")

// hookConcurrency is how many Before (or After) hooks of one delete step run at once: a
// batched move's transaction can hold the removals of up to 100 entities, and their hooks
// (enqueues, mostly) must all finish within the step's Within.
const hookConcurrency = 16

// removing is what the companions of one entity need done when it leaves the table: the
// Removals they answered for the entity at (pk, rk).
type removing struct {
	pk, rk string
	rs     []Removal
}

// removals asks every companion of table what removing e means to it (see Companion).
// Each gets its own copy of e.
func (a *Archiver) removals(ctx context.Context, table string, e *codec.Entity) ([]Removal, error) {
	cs := a.companions(table)
	if len(cs) == 0 {
		return nil, nil
	}
	out := make([]Removal, 0, len(cs))
	for i, c := range cs {
		cp := *e
		cp.Properties = maps.Clone(e.Properties)
		r, err := c.Removal(ctx, &cp)
		if err != nil {
			// Not the RowKey: a range move asks about every row it selects, and a row a
			// companion refuses may be an index copy, whose key holds the indexed value.
			return nil, fmt.Errorf("consistency: the companion %d of %s, asked about the copies of a row of partition %s: %w", i, table, e.PartitionKey, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// withCompanions runs the delete step of a move, send (one delete, or one entity group
// transaction of deletes and companion actions), under the protocol of the removals of
// the entities it deletes (Removal), single and batched moves alike:
//
//  1. one deadline, the shortest Within of all of them, taken before the first Before;
//  2. their Before hooks (up to hookConcurrency at once), under the deadline;
//  3. send, under the deadline: a deadline already passed sends nothing, one that passes
//     during the request abandons it;
//  4. once send succeeded, their After hooks (runAfter): the errors of those whose
//     Removal has no Before come back, the others are logged. When send's outcome is
//     unknown (repo.ErrOutcomeUnknown: it may have landed) or it met a gone entity
//     (repo.ErrNotFound: a concurrent run, or an earlier attempt, deleted it), the After
//     hooks run too, so that a Removal without a Before does not depend on a response
//     that was lost: after an unknown outcome their errors are logged (the move starts
//     over, and a rerun that finds the entity gone asks the Sweepers); after a 404 the
//     errors of those without a Before are joined to send's (errMoveStepFailed).
//
// A deadline that passed before send succeeded is errRestart (the move starts over from
// fresh reads, and its Before hooks run again), whatever the hook or the request said.
// Other errors of a Before or of send come back as they are. job names the job kind for
// the step hooks of tests, table the source table for the logs.
func (a *Archiver) withCompanions(ctx context.Context, job, table string, es []removing, send func(context.Context) error) error {
	var within time.Duration
	var befores []func(context.Context) error
	hooked := false
	for _, e := range es {
		hooked = hooked || len(e.rs) > 0
		for _, r := range e.rs {
			if r.Within > 0 && (within == 0 || r.Within < within) {
				within = r.Within
			}
			if r.Before != nil {
				befores = append(befores, r.Before)
			}
		}
	}
	dctx, cancel := ctx, context.CancelFunc(func() {})
	if within > 0 {
		dctx, cancel = context.WithTimeout(ctx, within)
	}
	defer cancel()
	late := func(err error) error {
		if err != nil && ctx.Err() == nil && dctx.Err() != nil {
			return fmt.Errorf("%w: the companions' deadline (%v) passed before the delete was done", errRestart, within)
		}
		return err
	}
	if len(befores) > 0 {
		err := fanout.Do(dctx, len(befores), hookConcurrency, func(ctx context.Context, i int) error { return befores[i](ctx) })
		if err != nil {
			return late(err)
		}
	}
	if hooked {
		if err := a.after(job, "companions-before"); err != nil {
			return err
		}
	}
	if err := dctx.Err(); err != nil {
		return late(err) // not sent: too late
	}
	if err := send(dctx); err != nil {
		if errors.Is(err, errs.ErrOutcomeUnknown) || errors.Is(err, errs.ErrNotFound) {
			// The delete may have landed: a Removal without a Before has no other step.
			// A 404 proves the entity gone (a move that then finds its copy in the target
			// reports it moved): After's error must fail that move as after a delete of
			// its own; after an unknown outcome the move re-reads anyway.
			gone := errors.Is(err, errs.ErrNotFound)
			if aerr := a.runAfter(ctx, table, es, gone); aerr != nil {
				return errors.Join(late(err), aerr)
			}
		}
		return late(err)
	}
	return a.runAfter(ctx, table, es, true)
}

// runAfter runs the After hooks of entities whose delete landed (or may have). The
// errors of hooks whose Removal has no Before are returned when landed is true (nothing
// else removes those copies); the others are logged (see Removal.After).
func (a *Archiver) runAfter(ctx context.Context, table string, es []removing, landed bool) error {
	type hook struct {
		pk, rk  string
		fn      func(context.Context) error
		covered bool // the Removal has a Before
	}
	var hooks []hook
	for _, e := range es {
		for _, r := range e.rs {
			if r.After != nil {
				hooks = append(hooks, hook{e.pk, e.rk, r.After, r.Before != nil})
			}
		}
	}
	var mu sync.Mutex
	var failed error
	_ = fanout.Each(ctx, len(hooks), hookConcurrency, func(ctx context.Context, i int) error {
		h := hooks[i]
		err := h.fn(ctx)
		switch {
		case err == nil:
		case landed && !h.covered:
			mu.Lock()
			failed = errors.Join(failed, fmt.Errorf("%w: (%s, %s) of %s: %w", errMoveStepFailed, h.pk, h.rk, table, err))
			mu.Unlock()
		default:
			a.opts.Logger.Warn("consistency: a companion's prompt step failed after the move; its first step, or a rerun, covers it",
				zap.String("table", table), zap.String("partitionKey", h.pk), zap.String("rowKey", h.rk), errs.LogField(err))
		}
		return nil
	})
	return failed
}

// alreadyArchived is the outcome of a move that found the entity gone from the source
// and its archive copy written: OutcomeAlreadyArchived, once the Sweepers of the source
// table were told (Sweeper.Gone; their error fails the move).
func (a *Archiver) alreadyArchived(ctx context.Context, job ArchiveEntityJob) (Outcome, error) {
	for i, c := range a.companions(job.Source) {
		s, ok := c.(Sweeper)
		if !ok {
			continue
		}
		if err := s.Gone(ctx, job.PartitionKey, job.RowKey); err != nil {
			return "", fmt.Errorf("consistency: the companion %d of %s, told that (%s, %s) is gone: %w", i, job.Source, job.PartitionKey, job.RowKey, err)
		}
	}
	return OutcomeAlreadyArchived, nil
}

// companionSpelling returns the name Options.Companions gives table (table names are
// case-insensitive; the companions' transaction actions carry that spelling, and a
// transaction covers one table as spelled), or table itself when none does.
func (a *Archiver) companionSpelling(table string) string {
	if tc, ok := a.companionsByTable[strings.ToLower(table)]; ok {
		return tc.name
	}
	return table
}

// companions returns the companions of table (case-insensitive, as table names are).
func (a *Archiver) companions(table string) []Companion {
	return a.companionsByTable[strings.ToLower(table)].list
}

// tableCompanions are the companions Options.Companions gives one table, with the
// table's name as it spells it.
type tableCompanions struct {
	name string
	list []Companion
}

// indexCompanions checks Options.Companions and keys it by lower-case table name.
func indexCompanions(in map[string][]Companion) (map[string]tableCompanions, error) {
	out := make(map[string]tableCompanions, len(in))
	for table, cs := range in {
		if err := codec.ValidateTableName(table); err != nil {
			return nil, err
		}
		key := strings.ToLower(table)
		if _, dup := out[key]; dup {
			return nil, errs.Invalid("Options.Companions", "names table %s twice (table names are case-insensitive)", table)
		}
		for _, c := range cs {
			if c == nil {
				return nil, errs.Invalid("Options.Companions", "holds a nil companion for table %s", table)
			}
		}
		out[key] = tableCompanions{name: table, list: append([]Companion(nil), cs...)}
	}
	return out, nil
}

// removalActions asks the source table's companions for their Removals of e and returns
// them with the actions of the delete transaction (checkRemoval: the delete If-Match
// e's version first). A refusal is permanent and nothing is written.
func (a *Archiver) removalActions(ctx context.Context, src *repo.Table[codec.Entity], job ArchiveEntityJob, e *codec.Entity) ([]Removal, []repo.Action, error) {
	removals, err := a.removals(ctx, job.Source, e)
	if err != nil {
		return nil, nil, err
	}
	del := src.DeleteAction(job.PartitionKey, job.RowKey, &repo.DeleteOptions{ETag: e.ETag})
	acts, err := checkRemoval(job.Source, del, job.PartitionKey, job.RowKey, removals)
	if err != nil {
		return nil, nil, err
	}
	return removals, acts, nil
}

package consistency

import (
	"context"
	"strings"
	"time"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
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
	// for the same entity (a restarted move, a redelivered job); each answer must stand
	// on its own. e is read back from storage: untrusted input.
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
	// job's), or the transaction is refused with ErrInvalidInput before it is sent (the
	// archive copy is then written and the source kept: a configuration error, permanent).
	Actions []repo.Action
	// Before, if set, runs before the delete of e is sent: the durable first step for
	// copies that live in other partitions or tables (an enqueue of the reconciliation
	// that removes them once e is gone). It must be idempotent, and harmless when the
	// delete does not follow (a reconciliation that still finds e keeps its copies).
	Before func(ctx context.Context) error
	// Within, if positive, bounds Before and the delete together, as the Settle/2
	// protocol of the eventually consistent patterns does: the archive takes one deadline,
	// Within from the moment before it calls the first Before, and gives it to the Before
	// hooks and to the delete's request. A delete that could not be sent in time is not
	// sent (or is abandoned) and the move starts over, so that a reconciliation Before
	// enqueued to run after the delete cannot run before it. The shortest Within of an
	// entity's (or a batch's) removals wins. 0 means no bound.
	Within time.Duration
	// After, if set, runs once the delete of e has landed: a prompt step that a stop can
	// skip (a reconciliation visible at once, where Before's waits out its delay). Its
	// error is logged, not returned: the move is done, and Before must already cover what
	// After hastens.
	After func(ctx context.Context) error
}

// companionSpelling returns the name Options.Companions gives table (table names are
// case-insensitive; the companions' transaction actions carry that spelling, and a
// transaction covers one table as spelled), or table itself when none does.
func (a *Archiver) companionSpelling(table string) string {
	for name := range a.opts.Companions {
		if strings.EqualFold(name, table) {
			return name
		}
	}
	return table
}

// companions returns the companions of table (case-insensitive, as table names are).
func (a *Archiver) companions(table string) []Companion {
	return a.companionsByTable[strings.ToLower(table)]
}

// indexCompanions checks Options.Companions and keys it by lower-case table name.
func indexCompanions(in map[string][]Companion) (map[string][]Companion, error) {
	out := make(map[string][]Companion, len(in))
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
		out[key] = append([]Companion(nil), cs...)
	}
	return out, nil
}

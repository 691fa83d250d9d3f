package migrate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/repo"
)

// Stage is a step of a migration. The order is Planned, DualWrite, Backfill, Verify,
// CutOver, CleanUp, Done; Abort leads from any stage before CleanUp to Aborting, then
// Aborted.
type Stage string

// The stages (see doc.go for what each process does in each).
const (
	Planned   Stage = "planned"
	DualWrite Stage = "dualwrite"
	Backfill  Stage = "backfill"
	Verify    Stage = "verify"
	CutOver   Stage = "cutover"
	CleanUp   Stage = "cleanup"
	Done      Stage = "done"
	Aborting  Stage = "aborting"
	Aborted   Stage = "aborted"
)

// next is the stage Advance moves to from each stage.
var next = map[Stage]Stage{
	Planned: DualWrite, DualWrite: Backfill, Backfill: Verify, Verify: CutOver,
	CutOver: CleanUp, CleanUp: Done, Aborting: Aborted,
}

// before is the stage each stage can be reached from (Aborting: any before CleanUp).
var before = map[Stage][]Stage{
	Planned: {"", Done, Aborted}, DualWrite: {Planned}, Backfill: {DualWrite}, Verify: {Backfill},
	CutOver: {Verify}, CleanUp: {CutOver}, Done: {CleanUp}, Aborted: {Aborting},
	Aborting: {Planned, DualWrite, Backfill, Verify, CutOver},
}

// State is a migration's state record as a process read it.
type State struct {
	// Name is the migration's name; Source and Target its tables, in lower case.
	Name, Source, Target string
	// Stage is the current stage, Previous the one it was reached from.
	Stage, Previous Stage
	// Since is the service's time of the transition to Stage.
	Since time.Time
	etag  string
	// transitions are the ids of the record's last writes (see decideTransition).
	transitions []string
	// rec is the stage the record shows and holder its migration ("name:kind"), whoever's
	// it is; ended the outcomes of migrations it replaced (record_owner.go).
	rec    Stage
	holder string
	ended  []string
}

// record is the state record: one entity per migrated source table in the control table,
// PartitionKey the source table's name in lower case, RowKey "migration".
type record struct {
	PartitionKey string    `table:",pk"`
	RowKey       string    `table:",rk"`
	ETag         string    `table:",etag"`
	Timestamp    time.Time `table:",timestamp"`
	Name         string
	// Kind is the kind of migration (kindRekey, kindSchema) that Name names.
	Kind     string
	Target   string
	Stage    string
	Previous string
	// Transitions lists the ids of the last writes of the record, newest first.
	Transitions string
	// Ended lists the outcomes of the ended migrations whose records Plan replaced,
	// newest first (record_owner.go).
	Ended string
}

const recordRowKey = "migration"

// ErrInProgress is returned by Plan when another migration of the same source table has
// not ended (Done or Aborted). It wraps errs.ErrAlreadyExists.
var ErrInProgress = fmt.Errorf("migrate: another migration of this source table is in progress: %w", errs.ErrAlreadyExists)

func (m *Migration[O, N]) recordKey() string { return strings.ToLower(m.spec.Source.Name()) }

// load reads the state record and validates it: a record is data anyone with access to
// the control table could have written. A missing record is the zero State, Stage "".
func (m *Migration[O, N]) load(ctx context.Context) (State, error) {
	r, err := m.control.Get(ctx, m.recordKey(), recordRowKey)
	if errors.Is(err, repo.ErrNotFound) || (err != nil && isTableNotFound(err)) {
		return State{Source: m.recordKey()}, nil
	}
	if err != nil {
		return State{}, err
	}
	return m.validRecord(r)
}

func (m *Migration[O, N]) validRecord(r record) (State, error) {
	ids, err := transitionIDs(r.Transitions)
	if err != nil {
		return State{}, err
	}
	ended, err := endedOutcomes(r.Ended)
	if err == nil {
		err = checkKind(r.Kind)
	}
	if err != nil {
		return State{}, err
	}
	st := State{Name: r.Name, Source: r.PartitionKey, Target: r.Target, Stage: Stage(r.Stage),
		Previous: Stage(r.Previous), Since: r.Timestamp, etag: r.ETag, transitions: ids,
		rec: Stage(r.Stage), holder: r.Name + ":" + r.Kind, ended: ended}
	ours := r.Name == m.spec.Name && r.Kind == m.kind
	froms, known := before[st.Stage]
	legal := false
	for _, f := range froms {
		legal = legal || f == st.Previous
	}
	switch {
	case !known || !legal:
		return State{}, errs.Invalid("state record", "stage %q after %q is not a stage of a migration", clip(r.Stage), clip(r.Previous))
	case r.Timestamp.IsZero() || r.ETag == "":
		return State{}, errs.Invalid("state record", "no Timestamp or ETag")
	case ours && r.Target != strings.ToLower(m.spec.Target.Name()):
		return State{}, errs.Invalid("state record", "records another target table")
	case ours:
		return st, nil
	}
	if stage, ok := outcomeOf(ended, m.spec.Name, m.kind); ok { // ours ended, then replaced
		return State{Name: m.spec.Name, Source: m.recordKey(), Target: strings.ToLower(m.spec.Target.Name()), Stage: stage,
			Previous: before[stage][0], etag: r.ETag, transitions: ids, rec: st.rec, holder: st.holder, ended: ended}, nil
	}
	if st.Stage != Done && st.Stage != Aborted {
		return st, fmt.Errorf("migrate: source %s: %w", m.recordKey(), ErrInProgress)
	}
	// An ended migration of another name or kind: nothing of ours.
	return State{Source: m.recordKey(), etag: r.ETag, Stage: "", Previous: Stage(r.Stage), transitions: ids,
		rec: st.rec, holder: st.holder, ended: ended}, nil
}

// clip keeps an untrusted value out of error text beyond a short prefix.
func clip(s string) string {
	if len(s) > 16 {
		return s[:16] + "..."
	}
	return s
}

// create writes the Planned record: insert when there is none, replace If-Match an ended
// one. A second migration of one source table meets ErrInProgress.
func (m *Migration[O, N]) create(ctx context.Context) error {
	if err := m.control.CreateIfNotExists(ctx); err != nil {
		return err
	}
	st, err := m.load(ctx)
	if err != nil {
		return err
	}
	id := newTransitionID()
	r := record{PartitionKey: m.recordKey(), RowKey: recordRowKey, Name: m.spec.Name, Kind: m.kind,
		Target: strings.ToLower(m.spec.Target.Name()), Stage: string(Planned), Transitions: withTransition(id, st.transitions),
		Ended: endedWith(st, m.spec.Name, m.kind)}
	switch {
	case st.etag == "":
		err = m.control.Insert(ctx, &r)
	case st.rec == Done || st.rec == Aborted:
		r.ETag = st.etag
		err = m.control.Update(ctx, &r, nil)
	default:
		return ErrInProgress
	}
	if err != nil && !errors.Is(err, repo.ErrOutcomeUnknown) {
		if errors.Is(err, repo.ErrAlreadyExists) || errors.Is(err, repo.ErrPreconditionFailed) {
			return ErrInProgress
		}
		return err
	}
	now, lerr := m.load(ctx)
	if lerr != nil && !errors.Is(lerr, ErrInProgress) {
		return lerr
	}
	if derr := decideTransition(err, id, st.Stage, Planned, now); derr != nil {
		if errors.Is(derr, errs.ErrPreconditionFailed) {
			return ErrInProgress
		}
		return derr
	}
	return nil
}

// transition moves the record from st to stage If-Match the ETag read. Its write
// carries a fresh id, so an answer that was lost is decided by evidence, not by the
// stage the record shows (decideTransition): a transition that landed succeeds even when
// another process has moved the record on since. It returns the record as read after
// the write.
func (m *Migration[O, N]) transition(ctx context.Context, st State, stage Stage) (State, error) {
	id := newTransitionID()
	r := record{PartitionKey: m.recordKey(), RowKey: recordRowKey, ETag: st.etag, Name: m.spec.Name, Kind: m.kind,
		Target: strings.ToLower(m.spec.Target.Name()), Stage: string(stage), Previous: string(st.Stage),
		Transitions: withTransition(id, st.transitions), Ended: strings.Join(st.ended, ",")}
	err := m.control.Update(ctx, &r, nil)
	if err != nil && !errors.Is(err, repo.ErrOutcomeUnknown) {
		return State{}, decideTransition(err, id, st.Stage, stage, State{})
	}
	read := time.Now() // a view's age counts from the start of its read
	now, lerr := m.load(ctx)
	if lerr != nil {
		return landedDespite(lerr, id, now)
	}
	m.remember(now, read)
	return now, decideTransition(err, id, st.Stage, stage, now)
}

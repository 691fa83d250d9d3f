package repo

import (
	"context"
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// Mode says how a write treats the properties already stored.
type Mode int

const (
	// Replace stores exactly the properties sent: properties absent from the new value are
	// removed. It is the default, because a typed value is the whole entity.
	Replace Mode = iota
	// Merge updates the properties sent and keeps the others. Beware of merging a struct
	// with omitempty fields: an omitted property keeps its old value.
	Merge
)

// UpsertOptions configures Upsert and UpsertAction. nil means the zero value.
type UpsertOptions struct {
	// Mode: Replace (default) or Merge.
	Mode Mode
	// Properties, if set, restricts the write to these properties (stored names or Go field
	// names) and requires Mode Merge: the way to set one point of a data series.
	Properties []string
}

// UpdateOptions configures Update and UpdateAction. nil means the zero value.
type UpdateOptions struct {
	// Mode: Replace (default) or Merge.
	Mode Mode
	// Properties, if set, restricts the write to these properties and requires Mode Merge.
	Properties []string
	// Unconditional sends If-Match: * even when the value carries an ETag. By default an
	// update is conditional on the value's ETag when T has an ETag field and it is set,
	// and unconditional otherwise. Either way the entity must exist (ErrNotFound).
	Unconditional bool
}

// DeleteOptions configures Delete and DeleteAction. nil means the zero value.
type DeleteOptions struct {
	// ETag, if set, makes the delete conditional (ErrPreconditionFailed if it changed).
	ETag string
}

type actionKind uint8

const (
	kindInsert actionKind = iota
	kindUpsertReplace
	kindUpsertMerge
	kindUpdateReplace
	kindUpdateMerge
	kindDelete
)

var kindNames = [...]string{"insert", "upsert", "upsert (merge)", "update", "update (merge)", "delete"}

func (k actionKind) String() string { return kindNames[k] }

// writeAction is one entity write, prepared (encoded and checked) before any request. The
// same value serves single writes and transaction actions, so that both share one
// definition of what "already applied" means (see verify).
type writeAction struct {
	kind    actionKind
	table   string
	svc     *aztables.ServiceClient
	client  *aztables.Client
	pk, rk  string
	ifMatch string // update/delete: "*" or an ETag
	body    []byte // nil for delete
	setETag func(string)
	err     error // a refusal found while preparing; reported before anything is sent

	// Write tracking (Options.TrackWrites); all empty when it is off.
	track   *tracker
	writeID string // this write's id
	hist    string // the history stored with it

	// etag is the ETag the write left, once it is known to have happened ("" for a
	// delete; supersededETag when the stored version is no longer this write's).
	etag string
}

func (w *writeAction) wire() wireAction {
	a := wireAction{table: w.table, pk: w.pk, rk: w.rk, body: w.body}
	switch w.kind {
	case kindInsert:
		a.method = "POST"
	case kindUpsertReplace:
		a.method = "PUT"
	case kindUpsertMerge:
		a.method = "MERGE"
	case kindUpdateReplace:
		a.method, a.ifMatch = "PUT", w.ifMatch
	case kindUpdateMerge:
		a.method, a.ifMatch = "MERGE", w.ifMatch
	case kindDelete:
		a.method, a.ifMatch = "DELETE", w.ifMatch
	}
	return a
}

// checkAddressable refuses keys aztables cannot address in a URL. The service accepts an
// empty PartitionKey, but aztables v1.4.1 refuses it for get, update, upsert and delete, so
// such an entity could be inserted and never touched again: refuse it everywhere.
func checkAddressable(pk, rk string) error {
	if pk == "" {
		return errs.Invalid("PartitionKey", "is empty: valid for the service, but aztables cannot address it in get, update or delete")
	}
	if err := codec.ValidateKey("PartitionKey", pk); err != nil {
		return err
	}
	return codec.ValidateKey("RowKey", rk)
}

func (t *Table[T]) prepare(kind actionKind, v *T, mode Mode, props []string, ifMatch string) writeAction {
	w := writeAction{kind: kind, table: t.name, svc: t.svc, client: t.client, ifMatch: ifMatch}
	if v == nil {
		w.err = errs.Invalid("entity", "is nil")
		return w
	}
	if t.sel != nil {
		w.err = errs.Invalid("table", "is a projection (Project): it reads a subset of the properties and cannot write")
		return w
	}
	w.pk, w.rk = t.codec.Keys(v)
	if w.err = checkAddressable(w.pk, w.rk); w.err != nil {
		return w
	}
	if t.codec.Encrypted() && (mode == Merge || len(props) > 0) {
		w.err = &InvalidInputError{Type: fmt.Sprintf("%T", *v), Field: "Mode", Reason: "a merge of an entity with encrypted properties is refused: " +
			"its properties are encrypted under one content key recorded with the entity, which a merge would overwrite or leave stale, " +
			"losing data (the Azure Table storage design guide, \"encrypt table data\"); use Mode Replace (the default), which writes the whole entity"}
		return w
	}
	if len(props) > 0 {
		if mode != Merge {
			w.err = errs.Invalid("Properties", "a write restricted to some properties must use Mode Merge (Replace would remove the others)")
			return w
		}
		w.body, w.err = t.codec.EncodeProperties(v, props...)
	} else {
		w.body, w.err = t.codec.Encode(v)
	}
	if t.codec.HasETag() {
		w.setETag = func(etag string) { t.codec.SetETag(v, etag) }
	}
	if w.err == nil && t.track != nil {
		w.err = t.track.attach(&w)
	}
	return w
}

func (t *Table[T]) insertAction(v *T) writeAction {
	return t.prepare(kindInsert, v, Replace, nil, "")
}

func (t *Table[T]) upsertAction(v *T, o *UpsertOptions) writeAction {
	if o == nil {
		o = &UpsertOptions{}
	}
	kind := kindUpsertReplace
	if o.Mode == Merge {
		kind = kindUpsertMerge
	}
	return t.prepare(kind, v, o.Mode, o.Properties, "")
}

func (t *Table[T]) updateAction(v *T, o *UpdateOptions) writeAction {
	if o == nil {
		o = &UpdateOptions{}
	}
	kind := kindUpdateReplace
	if o.Mode == Merge {
		kind = kindUpdateMerge
	}
	ifMatch := "*"
	if !o.Unconditional && v != nil {
		if etag := t.codec.ETag(v); etag != "" {
			ifMatch = etag
		}
	}
	return t.prepare(kind, v, o.Mode, o.Properties, ifMatch)
}

func (t *Table[T]) deleteAction(pk, rk string, o *DeleteOptions) writeAction {
	w := writeAction{kind: kindDelete, table: t.name, svc: t.svc, client: t.client, pk: pk, rk: rk, ifMatch: "*", track: t.track}
	if o != nil && o.ETag != "" {
		w.ifMatch = o.ETag
	}
	w.err = checkAddressable(pk, rk)
	return w
}

// send performs one write with the single-entity API of aztables. It returns the new ETag.
func (w *writeAction) send(ctx context.Context) (string, error) {
	var etag azcore.ETag
	var err error
	switch w.kind {
	case kindInsert:
		var r aztables.AddEntityResponse
		r, err = w.client.AddEntity(ctx, w.body, nil)
		etag = r.ETag
	case kindUpsertReplace, kindUpsertMerge:
		mode := aztables.UpdateModeReplace
		if w.kind == kindUpsertMerge {
			mode = aztables.UpdateModeMerge
		}
		var r aztables.UpsertEntityResponse
		r, err = w.client.UpsertEntity(ctx, w.body, &aztables.UpsertEntityOptions{UpdateMode: mode})
		etag = r.ETag
	case kindUpdateReplace, kindUpdateMerge:
		mode := aztables.UpdateModeReplace
		if w.kind == kindUpdateMerge {
			mode = aztables.UpdateModeMerge
		}
		m := azcore.ETag(w.ifMatch)
		var r aztables.UpdateEntityResponse
		r, err = w.client.UpdateEntity(ctx, w.body, &aztables.UpdateEntityOptions{UpdateMode: mode, IfMatch: &m})
		etag = r.ETag
	case kindDelete:
		m := azcore.ETag(w.ifMatch)
		_, err = w.client.DeleteEntity(ctx, w.pk, w.rk, &aztables.DeleteEntityOptions{IfMatch: &m})
	}
	return string(etag), errs.Wrap(err, w.kind.String(), w.table, w.pk, w.rk)
}

// echo reports whether err, met on a retry, may be the echo of an earlier attempt that was
// applied but whose response was lost: the insert now finds "its" entity, the update finds
// "its" ETag changed or the entity gone, the delete finds the entity gone or changed.
// Upserts never meet such an answer: they are idempotent.
func (w *writeAction) echo(err error) bool {
	switch w.kind {
	case kindInsert:
		// 404: the table was deleted after the insert landed.
		return errors.Is(err, ErrAlreadyExists) || errors.Is(err, ErrNotFound)
	case kindUpdateReplace, kindUpdateMerge, kindDelete:
		return errors.Is(err, ErrPreconditionFailed) || errors.Is(err, ErrNotFound)
	}
	return false
}

// idempotent reports whether sending w again can only restore the state its earlier attempt
// left, whoever else wrote: upserts.
func (w *writeAction) idempotent() bool {
	return w.kind == kindUpsertReplace || w.kind == kindUpsertMerge
}

// resolve decides a retried write that met an echo (err) after an earlier attempt that may
// have been applied (cause). It returns nil when the write is known to have happened
// (write tracking found its id), and an *OutcomeUnknownError otherwise.
func (w *writeAction) resolve(ctx context.Context, cause, err error) error {
	ok, jerr := w.applied(ctx)
	if jerr != nil {
		return jerr
	}
	if ok {
		w.recovered()
		return nil
	}
	return &errs.OutcomeUnknownError{Op: w.kind.String(), Resource: w.table, PartitionKey: w.pk, RowKey: w.rk, Cause: cause, Err: err}
}

// recovered records a write known to have happened only through a retry: its ETag was in
// the lost response, so the value gets one that matches no version (see supersededETag).
func (w *writeAction) recovered() { w.setResult(supersededETag) }

func (w *writeAction) setResult(etag string) {
	if w.kind == kindDelete {
		return
	}
	w.etag = etag
	if w.setETag != nil {
		w.setETag(etag)
	}
}

// attach adds the tracking property to a prepared insert, update or upsert. An entity
// that carries the property itself (an extra map, a dynamic entity) is refused, whatever
// the kind of write: the body would hold the name twice (the service keeps one of them,
// and reads hide it), or an untracked write would store a history of its own making.
func (tr *tracker) attach(w *writeAction) error {
	w.track = tr
	if w.kind != kindDelete {
		if _, found, err := codec.WithoutProperties(w.body, tr.prop); err != nil {
			return err
		} else if found {
			return &InvalidInputError{Field: tr.prop, Reason: "is the table's write-tracking property (Options.WriteIDProperty), " +
				"reserved for the write history that the table stores itself: remove it from the entity"}
		}
	}
	switch w.kind {
	case kindDelete, kindUpsertReplace, kindUpsertMerge:
		// Idempotent, or nothing to track: an unconditional merge leaves the stored
		// history as it is (so it stays true), and an unconditional replace removes it
		// (later retries that would have needed it say ErrOutcomeUnknown).
		return nil
	case kindUpdateReplace, kindUpdateMerge:
		if w.ifMatch == "*" {
			return nil
		}
	}
	tr.plan(w)
	body, err := withHistory(w.body, tr.prop, w.hist)
	if err != nil {
		return err
	}
	n, err := codec.CountProperties(body)
	if err != nil {
		return err
	}
	if n > codec.MaxProperties {
		return errs.TooLarge("(properties)", "too many custom properties with the write-tracking property "+tr.prop, n, codec.MaxProperties)
	}
	if len(body) > codec.MaxEntityBytes {
		return errs.TooLarge("(entity)", "entity larger than 1 MiB with the write-tracking property "+tr.prop, len(body), codec.MaxEntityBytes)
	}
	w.body = body
	return nil
}

// succeeded records a write the service acknowledged.
func (w *writeAction) succeeded(etag string) {
	if w.track != nil && w.kind != kindDelete {
		w.track.remember(w.pk, w.rk, etag, w.hist)
	}
	w.setResult(etag)
}

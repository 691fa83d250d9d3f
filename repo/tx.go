package repo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/retry"
)

// Transaction limits of the service (the Azure Table storage design guide, "entity group transactions").
const (
	// MaxTransactionActions is the most actions one entity group transaction may hold.
	MaxTransactionActions = 100
	// MaxTransactionBytes is the size a transaction's payload must stay under (4 MiB).
	MaxTransactionBytes = 4 << 20
)

// Action is one write of an entity group transaction, built by a Table's InsertAction,
// UpsertAction, UpdateAction or DeleteAction. Actions of different entity types may be
// mixed (a Department and its Employees) as long as they address the same table and
// partition. The value is encoded and checked when the action is built; Submit reports
// any refusal before it sends anything.
type Action struct {
	w  writeAction
	rp retry.Policy
}

// InsertAction returns an insert of v for Submit.
func (t *Table[T]) InsertAction(v *T) Action {
	return Action{w: t.insertAction(v), rp: t.opts.Retry}
}

// UpsertAction returns an upsert of v (replace by default, or merge) for Submit.
func (t *Table[T]) UpsertAction(v *T, opts *UpsertOptions) Action {
	return Action{w: t.upsertAction(v, opts), rp: t.opts.Retry}
}

// UpdateAction returns an update of v for Submit: conditional on v's ETag like Update.
// Unlike a bare aztables update action, it never silently inserts a missing entity.
func (t *Table[T]) UpdateAction(v *T, opts *UpdateOptions) Action {
	return Action{w: t.updateAction(v, opts), rp: t.opts.Retry}
}

// DeleteAction returns a delete for Submit, conditional if opts.ETag is set.
func (t *Table[T]) DeleteAction(pk, rk string, opts *DeleteOptions) Action {
	return Action{w: t.deleteAction(pk, rk, opts), rp: t.opts.Retry}
}

// Keys returns the action's PartitionKey and RowKey.
func (a Action) Keys() (pk, rk string) { return a.w.pk, a.w.rk }

// CheckTransaction runs the checks Submit runs before it sends anything, without sending:
// it returns the error Submit would refuse actions with (ErrInvalidInput: no actions,
// actions on two tables or two partitions, two actions on one entity, more than
// MaxTransactionActions actions, a payload of MaxTransactionBytes or more, an action whose
// entity broke a limit), or nil. A multi-step write calls it before its first step, so
// that a transaction it will send last cannot be refused after the earlier steps landed.
//
// Errors: ErrInvalidInput.
func CheckTransaction(actions ...Action) error { return checkTransaction(actions) }

// Submit runs actions as one entity group transaction: all are applied or none is.
//
// Before sending, it refuses with ErrInvalidInput (no request sent) a transaction that the
// service would refuse or that would not be atomic: no actions, actions on two tables or
// two partitions, two actions on one entity, more than MaxTransactionActions actions, a
// payload of MaxTransactionBytes or more, or any action whose entity broke a limit. A
// transaction that does not fit is never split.
//
// On success each insert/upsert/update action's value has its new ETag (when the service
// returns one; see TableClientOptions), and the ETags are returned in action order ("" for
// deletes). When an action fails, the error is an *ActionError with its index, keys and
// real error code, unwrapping to the sentinel of that code.
//
// A delete whose key holds U+2028 or U+2029 is never sent unguarded, since a store may
// misaddress it inside a transaction (Azurite deletes another entity and answers
// success): without an ETag in opts, Submit reads the entity's ETag first and makes the
// delete conditional on it (a missing entity fails the transaction with ErrNotFound, as
// the service would; a changed one is read again). When the store refuses the delete with
// 400, 404 or 412 while the entity is still there with that ETag, the error is a
// *MisaddressedDeleteError (ErrDeleteMisaddressed); SubmitOrSplit then deletes it apart.
//
// Transient failures are retried, including an action that answered 503 ServerBusy or 500
// inside the changeset. A retry after a failure that may have been applied (a timeout, a
// reset, a 500: the transaction may have been committed) that then meets 404, 409 or 412
// cannot tell its own commit from another writer: with Options.TrackWrites, Submit reads
// the entities of its insert and conditional update actions, and one action whose write id
// is stored proves the whole transaction committed (it is atomic); the actions' values then
// get an ETag that matches no version (their own was in the lost response), so that a next
// conditional write re-reads. Otherwise, and always without tracking, the error wraps
// ErrOutcomeUnknown and carries the *ActionError. The retries log each failure's class
// (status and code) without keys, never its text: an action's error names its row, which
// may be an index copy whose key holds the indexed value.
//
// Errors: *ActionError, *MisaddressedDeleteError, ErrOutcomeUnknown, ErrInvalidInput,
// ErrTransient, *Error.
func Submit(ctx context.Context, actions ...Action) (_ []string, err error) {
	if err := checkTransaction(actions); err != nil {
		return nil, err
	}
	first := &actions[0].w
	ctx, span := telemetry.Start(ctx, "repo.transaction", telemetry.KeyTable.String(first.table), telemetry.KeyCount.Int(len(actions)))
	defer func() { telemetry.End(span, err) }()
	// A delete that a store could misaddress is guarded (misaddressed_delete.go).
	return submitGuarded(ctx, actions, submitRetried)
}

// submitRetried sends checked actions as one transaction, with retries.
func submitRetried(ctx context.Context, actions []Action) ([]string, error) {
	first := &actions[0].w
	etags := make([]string, len(actions))
	op := retry.Op{Name: "transaction", Resource: first.table, PartitionKey: first.pk, SensitiveKeys: true}
	var cause error // the first failure that may have been applied
	err := retry.Do(ctx, actions[0].rp, op, func(ctx context.Context, attempt int) error {
		err := submitOnce(ctx, actions, etags)
		var ae *ActionError
		switch {
		case err == nil:
			for i := range actions {
				actions[i].w.succeeded(etags[i])
			}
			return nil
		case cause != nil && errors.As(err, &ae) && echoCode(ae.StatusCode):
			return resolveTransaction(ctx, actions, cause, err)
		case cause == nil && retry.MayHaveApplied(err):
			cause = err
		}
		return err
	})
	if err != nil {
		// A transaction is never idempotent as a whole, whatever its actions.
		return nil, givenUp(err, cause, "transaction", first.table, first.pk, "")
	}
	for i := range actions {
		etags[i] = actions[i].w.etag
	}
	return etags, nil
}

// echoCode reports the statuses a transaction's own earlier commit can cause on a retry.
func echoCode(status int) bool {
	return status == http.StatusNotFound || status == http.StatusConflict || status == http.StatusPreconditionFailed
}

// resolveTransaction decides a retried transaction that failed with err after an attempt
// that may have been committed (cause), as Submit documents: one action whose write id is
// stored proves the whole transaction committed (it is atomic); nothing proves it did not.
func resolveTransaction(ctx context.Context, actions []Action, cause, err error) error {
	for i := range actions {
		w := &actions[i].w
		if w.kind == kindDelete || w.writeID == "" {
			continue
		}
		ok, jerr := w.applied(ctx)
		if jerr != nil {
			return withheld(jerr, w.table) // the action may be an index copy
		}
		if ok {
			for j := range actions {
				actions[j].w.recovered() // every ETag of the commit was in the lost response
			}
			return nil
		}
	}
	first := &actions[0].w
	return &errs.OutcomeUnknownError{Op: "transaction", Resource: first.table, PartitionKey: first.pk, Cause: cause, Err: err}
}

// checkTransaction names actions by index, never by key: an action may be an index copy
// (its RowKey, or an index entity's PartitionKey, holds the indexed value), as ActionError.
func checkTransaction(actions []Action) error {
	if len(actions) == 0 {
		return errs.Invalid("transaction", "has no actions")
	}
	if len(actions) > MaxTransactionActions {
		return errs.TooLarge("transaction", "too many actions for one entity group transaction", len(actions), MaxTransactionActions)
	}
	first := &actions[0].w
	seen := make(map[string]int, len(actions))
	for i := range actions {
		w := &actions[i].w
		if w.err != nil {
			return errs.Invalid("transaction", "action %d: %v", i, w.err)
		}
		if w.svc != first.svc || w.table != first.table {
			return errs.Invalid("transaction", "action %d addresses table %q, action 0 table %q: a transaction covers one table", i, w.table, first.table)
		}
		if w.pk != first.pk {
			return errs.Invalid("transaction", "action %d has another PartitionKey than action 0: a transaction covers one partition", i)
		}
		if j, dup := seen[w.rk]; dup {
			return errs.Invalid("transaction", "actions %d and %d address the same RowKey: one action per entity", j, i)
		}
		seen[w.rk] = i
	}
	if n := TransactionSize(actions...); n >= MaxTransactionBytes {
		return errs.TooLarge("transaction", "payload must stay under 4 MiB", n, MaxTransactionBytes)
	}
	return nil
}

// Size returns the bytes the action adds to a transaction's payload, measured as Submit
// measures it before sending: its part of the multipart body (the request line with the
// path-escaped keys, the headers, the body) and 256 bytes for the endpoint. A caller
// that cuts many actions into transactions cuts by it: a transaction fits while
// TransactionSize stays under MaxTransactionBytes. An action that Submit would refuse
// (Keys of a refused value) is measured as built.
func (a Action) Size() int { return partSize(a.w.wire()) }

// TransactionSize returns the payload of a transaction of actions as Submit measures it:
// the multipart framing and the Size of each action. Submit refuses a transaction whose
// size is MaxTransactionBytes or more.
func TransactionSize(actions ...Action) int {
	n := batchFraming
	for i := range actions {
		n += actions[i].Size()
	}
	return n
}

// submitOnce sends the transaction once and fills etags on success.
func submitOnce(ctx context.Context, actions []Action, etags []string) (err error) {
	first := &actions[0].w
	defer func() {
		// aztables parses $batch answers without bounds checks. batchPolicy refuses the
		// malformed ones first, but a client built without TableClientOptions has no
		// batchPolicy: no answer may crash the caller.
		if p := recover(); p != nil {
			err = &errs.ServiceError{Op: "transaction", Resource: first.table, PartitionKey: first.pk,
				Err: &errMalformedBatch{reason: fmt.Sprintf("the Azure SDK failed to read it: %v", p)}}
		}
	}()
	ex := &batchExchange{actions: make([]wireAction, len(actions))}
	fallback := make([]aztables.TransactionAction, len(actions))
	for i := range actions {
		ex.actions[i] = actions[i].w.wire()
		fallback[i] = fallbackAction(&actions[i].w)
	}
	_, err = first.client.SubmitTransaction(withBatchExchange(ctx, ex), fallback, nil)
	contentType, body, status := ex.contentType, ex.response, ex.status
	if !ex.applied {
		// The client was built without TableClientOptions: read what aztables kept.
		var re *azcore.ResponseError
		if err == nil || !errors.As(err, &re) || re.RawResponse == nil {
			return errs.Wrap(err, "transaction", first.table, first.pk, "")
		}
		body, _ = runtime.Payload(re.RawResponse)
		contentType, status = re.RawResponse.Header.Get("Content-Type"), re.StatusCode
	}
	if status != http.StatusAccepted {
		if err == nil {
			return nil
		}
		return errs.Wrap(err, "transaction", first.table, first.pk, "")
	}
	subs, perr := parseBatchResponse(contentType, body)
	if perr != nil {
		if err != nil {
			return errs.Wrap(err, "transaction", first.table, first.pk, "")
		}
		return &errs.ServiceError{Op: "transaction", Resource: first.table, PartitionKey: first.pk, StatusCode: status, Err: perr}
	}
	for _, s := range subs {
		if s.status >= 300 {
			return actionError(actions, s, err)
		}
	}
	for i := range subs {
		if i < len(etags) {
			etags[i] = subs[i].etag
		}
	}
	if err != nil {
		// aztables saw a failure our parse did not: report it rather than guess.
		return errs.Wrap(err, "transaction", first.table, first.pk, "")
	}
	return nil
}

func actionError(actions []Action, s subResponse, err error) error {
	idx, msg, ok := failedIndex(s.message)
	if !ok || idx >= len(actions) {
		idx = 0
		if len(actions) == 1 {
			ok = true
		}
	}
	ae := &ActionError{Index: idx, StatusCode: s.status, Code: s.code, Message: msg, Err: err}
	if !ok {
		ae.Index = -1
	} else {
		ae.PartitionKey, ae.RowKey = actions[idx].w.pk, actions[idx].w.rk
	}
	if ae.Err == nil {
		ae.Err = errors.New(s.code)
	}
	return ae
}

// fallbackAction is what aztables renders if batchPolicy is not installed.
func fallbackAction(w *writeAction) aztables.TransactionAction {
	a := aztables.TransactionAction{Entity: w.body}
	var m *azcore.ETag
	if w.ifMatch != "" {
		e := azcore.ETag(w.ifMatch)
		m = &e
	}
	switch w.kind {
	case kindInsert:
		a.ActionType = aztables.TransactionTypeAdd
	case kindUpsertReplace:
		a.ActionType = aztables.TransactionTypeInsertReplace
	case kindUpsertMerge:
		a.ActionType = aztables.TransactionTypeInsertMerge
	case kindUpdateReplace:
		a.ActionType, a.IfMatch = aztables.TransactionTypeUpdateReplace, m
	case kindUpdateMerge:
		a.ActionType, a.IfMatch = aztables.TransactionTypeUpdateMerge, m
	case kindDelete:
		a.ActionType, a.IfMatch = aztables.TransactionTypeDelete, m
		a.Entity = deleteStub(w.pk, w.rk)
	}
	return a
}

func deleteStub(pk, rk string) []byte {
	b, _ := json.Marshal(map[string]string{"PartitionKey": pk, "RowKey": rk})
	return b
}

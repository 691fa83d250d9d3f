package repo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/retry"
)

// A store can read a transaction's delete as addressing another entity than the one its
// request line names: Azurite takes an action's keys from the decoded URL with regular
// expressions whose "." stops at U+2028 and U+2029, and a delete has no body to fall back
// on. The delete of a RowKey holding one reaches the row with the empty RowKey of the
// partition (or a prefix of the key): without If-Match it deletes that row and answers
// success. A PartitionKey holding one is not read at all (400 InvalidInput). Submit
// therefore never sends such a delete unguarded: an unconditional one is pinned to the
// ETag of a read made just before, and a guarded one that the store refuses (400, 404 or
// 412) while the entity is still there with that very ETag is reported as a
// *MisaddressedDeleteError: no correct store refuses it. The service addresses these keys
// right; the pin costs one read per such delete, the check one read after such a refusal.

// MisaddressedDeleteError is a transaction refused because the store misaddressed one of
// its deletes: it answered 400, 404 or 412 to the delete of an entity that is still there
// with the ETag the delete named (Azurite does so for a key holding U+2028 or U+2029). The
// whole transaction was rolled back. It unwraps to ErrDeleteMisaddressed and to the
// refused action's *ActionError (and so to ErrNotFound or ErrPreconditionFailed): code
// that re-reads on those answers must test ErrDeleteMisaddressed first, or it re-reads the
// same state forever. SubmitOrSplit sends such deletes apart.
type MisaddressedDeleteError struct {
	// Refused is the store's answer to the delete (Index is the action's position).
	Refused *ActionError
}

// Error implements error. It names the action by position only: a key may hold an
// indexed value.
func (e *MisaddressedDeleteError) Error() string {
	return fmt.Sprintf("tablepatterns: transaction action %d: the store answered %d %s to the delete of an entity that is still there unchanged, "+
		"so it misaddressed the delete (Azurite does for a key holding U+2028 or U+2029: see package tabletest); nothing was written",
		e.Refused.Index, e.Refused.StatusCode, e.Refused.Code)
}

// Unwrap returns ErrDeleteMisaddressed and the refused action's *ActionError.
func (e *MisaddressedDeleteError) Unwrap() []error {
	return []error{errs.ErrDeleteMisaddressed, e.Refused}
}

// repinLimit bounds how often an unconditional delete is pinned again because another
// writer changed its entity between the read and the transaction.
const repinLimit = 8

// misaddressable reports whether a store may misaddress w inside a transaction.
func misaddressable(w *writeAction) bool {
	return w.kind == kindDelete && strings.ContainsAny(w.pk+w.rk, "\u2028\u2029")
}

// submitGuarded runs submit (one transaction, retried) with every misaddressable delete
// guarded by an ETag, and tells a misaddressed delete from a real refusal.
func submitGuarded(ctx context.Context, actions []Action, submit func(context.Context, []Action) ([]string, error)) ([]string, error) {
	var pin []int // the unconditional deletes that need an ETag of their entity
	guarded := false
	for i := range actions {
		if w := &actions[i].w; misaddressable(w) {
			guarded = true
			if w.ifMatch == "*" {
				pin = append(pin, i)
			}
		}
	}
	if !guarded {
		return submit(ctx, actions)
	}
	acts := slices.Clone(actions) // the caller's actions keep their own If-Match
	for round := 0; ; round++ {
		for _, i := range pin {
			if acts[i].w.ifMatch != "*" {
				continue
			}
			etag, found, err := currentETag(ctx, &acts[i])
			if err != nil {
				return nil, err
			}
			if !found {
				// What the service answers to the transaction: nothing was written.
				w := &acts[i].w
				return nil, &ActionError{Index: i, PartitionKey: w.pk, RowKey: w.rk, StatusCode: http.StatusNotFound,
					Code: "ResourceNotFound", Message: "The specified resource does not exist."}
			}
			acts[i].w.ifMatch = etag
		}
		etags, err := submit(ctx, acts)
		var ae *ActionError
		if err == nil || errors.Is(err, ErrOutcomeUnknown) || !errors.As(err, &ae) || ae.Index < 0 || ae.Index >= len(acts) ||
			!misaddressable(&acts[ae.Index].w) || !refusal(ae.StatusCode) {
			return etags, err
		}
		w := &acts[ae.Index].w
		etag, found, gerr := currentETag(ctx, &acts[ae.Index])
		switch {
		case gerr != nil:
			return nil, errors.Join(err, gerr)
		case found && etag == w.ifMatch:
			return nil, &MisaddressedDeleteError{Refused: ae}
		case found && actions[ae.Index].w.ifMatch == "*" && round < repinLimit:
			w.ifMatch = "*" // another writer changed it since the read: read it again
			continue
		}
		return nil, err
	}
}

// refusal reports the answers of a store that misaddressed a delete: 404 or 412 (it
// addressed another row), 400 (it found no key).
func refusal(status int) bool {
	return status == http.StatusNotFound || status == http.StatusPreconditionFailed || status == http.StatusBadRequest
}

// currentETag reads the ETag of a's entity, with a's retry policy.
func currentETag(ctx context.Context, a *Action) (etag string, found bool, err error) {
	w := &a.w
	op := retry.Op{Name: "get", Resource: w.table, PartitionKey: w.pk, RowKey: w.rk}
	err = retry.Do(ctx, a.rp, op, func(ctx context.Context, _ int) error {
		r, err := w.client.GetEntity(ctx, w.pk, w.rk, &aztables.GetEntityOptions{})
		if err != nil {
			return errs.Wrap(err, "get", w.table, w.pk, w.rk)
		}
		etag = string(r.ETag)
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return "", false, nil
	}
	return etag, err == nil, err
}

// SubmitOrSplit runs actions as one entity group transaction, like Submit, on every store
// that addresses its deletes right (the service does). On a store that misaddresses a
// delete (ErrDeleteMisaddressed: Azurite, for a key holding U+2028 or U+2029), it gives up
// atomicity for such deletes only, since the store cannot do them inside a transaction:
// the other actions go as one transaction, then each delete of a key holding U+2028 or
// U+2029 alone, conditional as it was built. Between the two (and for good if the call
// stops there) readers see the transaction's writes with those entities not yet deleted.
// A delete sent apart that finds its entity gone is success; one that finds it changed
// returns ErrPreconditionFailed after the transaction landed.
//
// Use it where that window is acceptable on such a store; Submit keeps atomicity and
// returns the *MisaddressedDeleteError instead. On an *ActionError, Index is the action's
// position in actions. The ETags are returned in action order ("" for deletes).
//
// Errors: *ActionError, ErrPreconditionFailed, ErrOutcomeUnknown, ErrInvalidInput,
// ErrTransient, *Error.
func SubmitOrSplit(ctx context.Context, actions ...Action) ([]string, error) {
	if err := checkTransaction(actions); err != nil {
		return nil, err
	}
	etags := make([]string, len(actions))
	rest := slices.Clone(actions)
	at := make([]int, len(actions)) // rest[j] is actions[at[j]]
	for i := range at {
		at[i] = i
	}
	var apart []int // the deletes sent alone, in action order
	split := false
	for len(rest) > 0 {
		got, err := Submit(ctx, rest...)
		var me *MisaddressedDeleteError
		if errors.As(err, &me) && !split {
			// The store misaddresses such keys: every delete of one goes apart.
			split = true
			for j := len(rest) - 1; j >= 0; j-- {
				if misaddressable(&rest[j].w) {
					apart = append(apart, at[j])
					rest, at = slices.Delete(rest, j, j+1), slices.Delete(at, j, j+1)
				}
			}
			slices.Reverse(apart)
			continue
		}
		if err != nil {
			var ae *ActionError
			if errors.As(err, &ae) && ae.Index >= 0 && ae.Index < len(at) {
				ae.Index = at[ae.Index]
			}
			return nil, err
		}
		for j, e := range got {
			etags[at[j]] = e
		}
		break
	}
	for _, i := range apart {
		if err := deleteAlone(ctx, actions[i]); err != nil {
			return nil, err
		}
	}
	return etags, nil
}

// deleteAlone sends the delete a as a single request, with a's retry policy: single
// requests address every key right. Its entity found gone is success (as asked).
func deleteAlone(ctx context.Context, a Action) error {
	w := &a.w
	var cause error
	op := retry.Op{Name: "delete", Resource: w.table, PartitionKey: w.pk, RowKey: w.rk}
	err := retry.Do(ctx, a.rp, op, func(ctx context.Context, _ int) error {
		_, err := w.send(ctx)
		switch {
		case err == nil, errors.Is(err, ErrNotFound):
			return nil
		case cause == nil && retry.MayHaveApplied(err):
			cause = err
		case cause != nil && errors.Is(err, ErrPreconditionFailed):
			return w.resolve(ctx, cause, err)
		}
		return err
	})
	return givenUp(err, cause, "delete", w.table, w.pk, w.rk)
}

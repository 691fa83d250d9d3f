package repo

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/internal/telemetry"
	"github.com/tablepatterns/tablepatterns/repo/filter"
	"github.com/tablepatterns/tablepatterns/retry"
)

// RotateOptions configures RotateKeys. nil means the zero value.
type RotateOptions struct {
	// Filter restricts the rotation to some entities (one partition, a key range). The
	// zero Expr rotates the whole table.
	Filter filter.Expr
	// Token resumes a rotation where an earlier run stopped (RotateResult.Token). It is
	// only valid with the same Filter.
	Token string
	// Pages bounds how many query pages this run processes; 0 processes all of them. A
	// bounded run returns a Token to continue with.
	Pages int
	// PageSize is the most entities per page, at most MaxPageSize (0: MaxPageSize).
	PageSize int
	// OnPage, if set, is called after each page is fully rotated, with the token that
	// resumes after it and the totals so far: persist the token there to resume after a
	// crash. An error it returns stops the run (and is returned).
	OnPage func(token string, progress RotateResult) error
	// Reencrypt, if set, re-encrypts instead of re-wrapping: every entity not yet under
	// the new key gets a fresh content key and new ciphertexts of its encrypted properties
	// (codec.Encryption.Reencrypt). Use it when a key-encryption key may be compromised:
	// re-wrapping keeps each entity's content key, which the old key and any earlier copy
	// of the entity's metadata (a backup, an earlier read) still unwrap. Rotate to a key id
	// that no entity carries yet: entities already under it are skipped. Costs a full read
	// of every entity instead of a projection, and a write of its encrypted properties.
	// Switch every writer to the new key before the run: an entity written meanwhile
	// under the compromised key stays under it, and a run that already passed it reports
	// complete. Defaults to false (re-wrap).
	Reencrypt bool
}

// RotateResult reports what a RotateKeys run did.
type RotateResult struct {
	// Rewrapped counts the entities whose content key this run re-wrapped under the new key.
	Rewrapped int
	// Reencrypted counts the entities this run re-encrypted under a fresh content key and
	// the new key (RotateOptions.Reencrypt).
	Reencrypted int
	// Current counts the entities found already under the new key (written after the key
	// changed, or rotated by an earlier run), or deleted before they could be rotated.
	Current int
	// Unencrypted counts the entities without encryption metadata (other entity types of
	// the table): left alone.
	Unencrypted int
	// Token resumes the rotation after the last page completed ("" when the rotation
	// reached the end of the table). On error it resumes at the page that failed.
	Token string
}

// RotateKeys re-wraps the content key of every encrypted entity of the table (or of
// opts.Filter) under Options.Encryption.Key, the key-encryption key to rotate to; the
// Encryption's Resolver must still know the keys being rotated away from. Afterwards the
// old keys can be retired. The encrypted properties are not rewritten: only each entity's
// encryption metadata changes (see codec.Encryption.Rewrap). That is the routine rotation;
// it does not help after a key compromise (the content keys stay the same, see
// RotateOptions.Reencrypt, which gives every entity a fresh content key and new
// ciphertexts).
//
// It is safe to stop anywhere and to run again, and to run while the application writes:
//
//   - each entity changes in one write, conditional on the ETag it was read with, that
//     swaps its metadata (and, when re-encrypting, its encrypted properties with it) and
//     nothing else: at every moment every entity is readable, under its old key or its
//     new one. The write is a merge of exactly those properties rather than a Replace:
//     under the ETag condition both store the same entity, and a merge does not send the
//     plaintext properties back through the dynamic decoder, whose types are not
//     lossless (a whole Edm.Double comes back as an integer);
//   - entities already under the new key are skipped, so a rerun (from a saved Token, or
//     from the start) only re-reads what was done;
//   - an entity changed by someone else since it was read (ETag mismatch) is read again
//     and retried; one deleted meanwhile is skipped.
//
// Cost: one query request per page of up to 1,000 entities (selecting only the keys and
// the metadata; every property when re-encrypting), then one entity group transaction per
// run of up to 100 entities of one partition within the page (falling back to one read and
// one write per entity of a transaction that met a concurrent change or whose outcome is
// unknown).
//
// Errors: ErrInvalidInput (no Options.Encryption, or no Key; a bad Token or Filter:
// nothing sent); a *codec.EncryptionError for an entity that cannot be rotated (its key
// is unknown to the resolver, the key is wrong, the metadata is tampered): the run stops
// there, that entity and every later one untouched, and the result's Token resumes at the
// failing page once the resolver is fixed; ErrTransient, *Error, ctx errors.
func (t *Table[T]) RotateKeys(ctx context.Context, opts *RotateOptions) (res RotateResult, err error) {
	ctx, span := telemetry.Start(ctx, "repo.rotate_keys", telemetry.KeyTable.String(t.name))
	defer func() {
		span.SetAttributes(attribute.Int("tablepatterns.rewrapped", res.Rewrapped), attribute.Int("tablepatterns.current", res.Current),
			attribute.Bool("tablepatterns.complete", err == nil && res.Token == ""))
		telemetry.End(span, err)
	}()
	return t.rotateKeys(ctx, opts)
}

func (t *Table[T]) rotateKeys(ctx context.Context, opts *RotateOptions) (RotateResult, error) {
	var o RotateOptions
	if opts != nil {
		o = *opts
	}
	x := t.opts.Encryption
	if x == nil || x.Key == nil {
		return RotateResult{}, errs.Invalid("Options.Encryption", "RotateKeys needs an Encryption whose Key is the key to rotate to (and whose Resolver knows the old keys)")
	}
	if o.Pages < 0 {
		return RotateResult{}, errs.Invalid("RotateOptions.Pages", "must not be negative, got %d", o.Pages)
	}
	raw, err := OfType[codec.Entity](t)
	if err != nil {
		return RotateResult{}, err
	}
	res := RotateResult{Token: o.Token}
	rot := rotation{x: x, reencrypt: o.Reencrypt}
	q := Query{Filter: o.Filter, PageSize: o.PageSize, Token: o.Token}
	if !o.Reencrypt {
		q.Select = []string{"PartitionKey", "RowKey", codec.EncryptionMetadataProperty}
	}
	pager := raw.Pages(q)
	for pages := 0; pager.More() && (o.Pages == 0 || pages < o.Pages); pages++ {
		page, err := pager.Next(ctx)
		if err != nil {
			return res, err
		}
		if err := rot.page(ctx, raw, page.Items, &res); err != nil {
			return res, err // res.Token still resumes at this page
		}
		res.Token = page.Token
		if o.OnPage != nil {
			if err := o.OnPage(res.Token, res); err != nil {
				return res, err
			}
		}
		if page.Token == "" {
			break
		}
	}
	return res, nil
}

// rotation is the per-entity step of one RotateKeys run: re-wrap or re-encrypt.
type rotation struct {
	x         *codec.Encryption
	reencrypt bool
}

// apply rotates e in place and reports whether it changed.
func (r rotation) apply(ctx context.Context, e *codec.Entity) (bool, error) {
	if r.reencrypt {
		return r.x.Reencrypt(ctx, e)
	}
	return r.x.Rewrap(ctx, e)
}

// written returns the properties a rotated e is written back with: the metadata, and the
// encrypted properties it lists when re-encrypting.
func (r rotation) written(e *codec.Entity) *UpdateOptions {
	if !r.reencrypt {
		return metadataOnly
	}
	props := append([]string{codec.EncryptionMetadataProperty}, codec.EncryptedProperties(e)...)
	return &UpdateOptions{Mode: Merge, Properties: props}
}

func (r rotation) count(res *RotateResult, n int) {
	if r.reencrypt {
		res.Reencrypted += n
	} else {
		res.Rewrapped += n
	}
}

// page rotates the entities of one page and writes them back, one transaction per run of
// entities of one partition.
func (r rotation) page(ctx context.Context, t *Table[codec.Entity], items []codec.Entity, res *RotateResult) error {
	var run []*codec.Entity
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		err := r.write(ctx, t, run, res)
		run = run[:0]
		return err
	}
	for i := range items {
		e := &items[i]
		changed, err := r.apply(ctx, e)
		if err != nil {
			if ferr := flush(); ferr != nil {
				return ferr
			}
			return err
		}
		if !changed {
			if _, ok := e.Properties[codec.EncryptionMetadataProperty]; ok {
				res.Current++
			} else {
				res.Unencrypted++
			}
			continue
		}
		if len(run) > 0 && (run[0].PartitionKey != e.PartitionKey || len(run) == MaxTransactionActions) {
			if err := flush(); err != nil {
				return err
			}
		}
		run = append(run, e)
	}
	return flush()
}

// write writes the rotated entities of one partition: a transaction of merges conditional
// on each entity's ETag, or, when one of them changed meanwhile or the transaction's
// outcome is unknown, each entity on its own from a fresh read (an entity already under
// the new key is then skipped, so a transaction that did land is not rotated twice).
func (r rotation) write(ctx context.Context, t *Table[codec.Entity], run []*codec.Entity, res *RotateResult) error {
	actions := make([]Action, len(run))
	for i, e := range run {
		actions[i] = t.UpdateAction(e, r.written(e))
	}
	_, err := Submit(ctx, actions...)
	if err == nil {
		r.count(res, len(run))
		return nil
	}
	var ae *ActionError
	reread := errors.Is(err, ErrOutcomeUnknown) ||
		errors.As(err, &ae) && (errors.Is(err, ErrPreconditionFailed) || errors.Is(err, ErrNotFound))
	if !reread {
		return err
	}
	for _, e := range run {
		rotated, err := r.one(ctx, t, e.PartitionKey, e.RowKey)
		if err != nil {
			return err
		}
		if rotated {
			r.count(res, 1)
		} else {
			res.Current++ // deleted meanwhile, or rewritten under the new key
		}
	}
	return nil
}

// metadataOnly writes the encryption metadata and nothing else, conditional on the ETag.
var metadataOnly = &UpdateOptions{Mode: Merge, Properties: []string{codec.EncryptionMetadataProperty}}

// one re-reads one entity and rotates it, retrying while other writers change it. It
// reports whether it wrote.
func (r rotation) one(ctx context.Context, t *Table[codec.Entity], pk, rk string) (bool, error) {
	op := t.op("rotate key", pk, rk)
	op.Retryable = func(err error) bool {
		return errors.Is(err, ErrPreconditionFailed) || errors.Is(err, ErrOutcomeUnknown) || retry.IsTransient(err)
	}
	wrote := false
	err := retry.Do(ctx, t.opts.Retry, op, func(ctx context.Context, _ int) error {
		wrote = false
		e, err := t.Get(ctx, pk, rk)
		if errors.Is(err, ErrNotFound) {
			return nil // deleted meanwhile: nothing to rotate
		}
		if err != nil {
			return err
		}
		changed, err := r.apply(ctx, &e)
		if err != nil || !changed {
			return err
		}
		err = t.Update(ctx, &e, r.written(&e))
		if errors.Is(err, ErrNotFound) && !errors.Is(err, ErrOutcomeUnknown) {
			return nil
		}
		wrote = err == nil
		return err
	})
	return wrote, err
}

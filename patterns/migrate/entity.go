package migrate

import (
	"context"
	"errors"
	"maps"
	"strings"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/errs"
	"github.com/tablepatterns/tablepatterns/patterns/internal/archive"
	"github.com/tablepatterns/tablepatterns/repo"
)

// The properties a new-layout copy carries besides the new type's own.
const (
	// PropMigration names the migration that wrote the copy.
	PropMigration = "TpMigration"
	// PropSourcePK and PropSourceRK are the keys of the old entity the copy was made of.
	PropSourcePK = "TpMigSourcePK"
	PropSourceRK = "TpMigSourceRK"
	// PropSourceETag is the version (ETag) of the old entity the copy was made of.
	PropSourceETag = "TpMigSourceETag"
	// PropDetached is true once the copy stands alone: its old entity was removed by
	// clean-up, or it was written in CleanUp or Done.
	PropDetached = "TpMigDetached"
)

var metaProps = []string{PropMigration, PropSourcePK, PropSourceRK, PropSourceETag, PropDetached}

// version is one layout's row for an entity as read: found or not, its ETag, and for a
// copy what it records.
type version struct {
	found    bool
	etag     string
	e        *codec.Entity
	srcETag  string
	detached bool
}

func isTableNotFound(err error) bool { return archive.IsTableNotFound(err) }

// get reads one row of a raw table; absence is a version with found false.
func get(ctx context.Context, t *repo.Table[codec.Entity], pk, rk string) (version, error) {
	e, err := t.Get(ctx, pk, rk)
	if errors.Is(err, repo.ErrNotFound) || (err != nil && isTableNotFound(err)) {
		return version{}, nil
	}
	if err != nil {
		return version{}, err
	}
	return version{found: true, etag: e.ETag, e: &e}, nil
}

// readSource reads the old entity (pk, rk). In a same-table migration a copy of ours at
// an old key is refused: planning rules that out, so the table was changed behind us.
func (m *Migration[O, N]) readSource(ctx context.Context, pk, rk string) (version, error) {
	v, err := get(ctx, m.src, pk, rk)
	if err == nil && v.found && m.sameTable && v.e.Properties[PropMigration] != nil {
		return version{}, errs.Invalid("source row", "a copy of a migration sits at old keys (%s, %s)", pk, rk)
	}
	return v, err
}

// readCopy reads the copy at the new keys of (pk, rk) and validates what it records: a
// row there that is not this migration's copy of (pk, rk) is refused, never replaced.
func (m *Migration[O, N]) readCopy(ctx context.Context, pk, rk string) (version, error) {
	npk, nrk, err := m.newKeys(pk, rk)
	if err != nil {
		return version{}, err
	}
	v, err := get(ctx, m.tgt, npk, nrk)
	if err != nil || !v.found {
		return v, err
	}
	return v, m.copyMeta(&v, pk, rk)
}

func (m *Migration[O, N]) copyMeta(v *version, pk, rk string) error {
	p := v.e.Properties
	name, _ := p[PropMigration].(string)
	spk, _ := p[PropSourcePK].(string)
	srk, _ := p[PropSourceRK].(string)
	v.srcETag, _ = p[PropSourceETag].(string)
	v.detached, _ = p[PropDetached].(bool)
	if name != m.spec.Name || spk != pk || srk != rk || !validETag(v.srcETag) {
		return errs.Invalid("copy", "the row at the new keys of (%s, %s) is not this migration's copy of them", pk, rk)
	}
	return nil
}

// validETag accepts the shape of a service ETag: W/"..." of a sane size.
func validETag(s string) bool {
	return len(s) < 256 && strings.HasPrefix(s, `W/"`) && strings.HasSuffix(s, `"`) && len(s) > 4
}

func (m *Migration[O, N]) newKeys(pk, rk string) (string, string, error) {
	npk, nrk, err := m.spec.Keys(pk, rk)
	if err != nil {
		return "", "", errs.Invalid("Spec.Keys", "(%s, %s): %v", pk, rk, errs.Redact(err))
	}
	if npk == "" || len(npk) > 1024 || len(nrk) > 1024 {
		return "", "", errs.Invalid("Spec.Keys", "new keys of (%s, %s) are not valid keys", pk, rk)
	}
	return npk, nrk, nil
}

// decodeOld turns a raw old entity into the application's old type.
func (m *Migration[O, N]) decodeOld(e *codec.Entity) (O, error) {
	var o O
	data, err := codec.EncodeEntity(e)
	if err == nil {
		err = m.spec.Source.Codec().Decode(data, &o)
	}
	m.spec.Source.Codec().SetETag(&o, e.ETag)
	return o, err
}

// newCopy is the new-layout copy of o, whose old keys are (pk, rk) and version srcETag.
func (m *Migration[O, N]) newCopy(o O, pk, rk, srcETag string, detached bool) (*codec.Entity, error) {
	npk, nrk, err := m.newKeys(pk, rk)
	if err != nil {
		return nil, err
	}
	n, err := m.spec.Transform(o)
	if err != nil {
		return nil, errs.Invalid("Spec.Transform", "(%s, %s): %v", pk, rk, errs.Redact(err))
	}
	m.spec.Target.Codec().SetKeys(&n, npk, nrk)
	data, err := m.spec.Target.Codec().Encode(&n)
	if err != nil {
		return nil, err
	}
	e, err := codec.DecodeEntity(data)
	if err != nil {
		return nil, err
	}
	if e.Properties == nil {
		e.Properties = map[string]any{}
	}
	e.Properties[PropMigration] = m.spec.Name
	e.Properties[PropSourcePK], e.Properties[PropSourceRK] = pk, rk
	e.Properties[PropSourceETag] = srcETag
	e.Properties[PropDetached] = detached
	return e, nil
}

// copyOf makes the copy of a raw old entity.
func (m *Migration[O, N]) copyOf(s version, pk, rk string) (*codec.Entity, error) {
	o, err := m.decodeOld(s.e)
	if err != nil {
		return nil, err
	}
	return m.newCopy(o, pk, rk, s.etag, false)
}

// decodeNew turns a copy into the new type, without the copy's own properties, with
// etag as its ETag.
func (m *Migration[O, N]) decodeNew(e *codec.Entity, etag string) (N, error) {
	var n N
	c := *e
	c.Properties = maps.Clone(e.Properties)
	for _, p := range metaProps {
		delete(c.Properties, p)
	}
	data, err := codec.EncodeEntity(&c)
	if err == nil {
		err = m.spec.Target.Codec().Decode(data, &n)
	}
	m.spec.Target.Codec().SetETag(&n, etag)
	return n, err
}

// fromOld is the new shape of a raw old entity, as a reader sees it (ETag: the old one).
func (m *Migration[O, N]) fromOld(s version, pk, rk string) (N, error) {
	var n N
	o, err := m.decodeOld(s.e)
	if err != nil {
		return n, err
	}
	if n, err = m.spec.Transform(o); err != nil {
		return n, errs.Invalid("Spec.Transform", "(%s, %s): %v", pk, rk, errs.Redact(err))
	}
	npk, nrk, err := m.newKeys(pk, rk)
	m.spec.Target.Codec().SetKeys(&n, npk, nrk)
	m.spec.Target.Codec().SetETag(&n, s.etag)
	return n, err
}

// conflict reports the answers that mean "another writer moved first, read again".
func conflict(err error) bool {
	return errors.Is(err, repo.ErrPreconditionFailed) || errors.Is(err, repo.ErrAlreadyExists) ||
		errors.Is(err, repo.ErrNotFound) || errors.Is(err, repo.ErrOutcomeUnknown)
}

// readSourceAfterCopy is Get's read of the old entity, after it read the copy.
func (m *Migration[O, N]) readSourceAfterCopy(ctx context.Context, pk, rk string) (version, error) {
	if m.seams.getBetween != nil {
		m.seams.getBetween(pk, rk)
	}
	return m.readSource(ctx, pk, rk)
}

// confirmSource is the copy rule's read of the old entity again after the copy was
// written: changed or gone since, the round starts over.
func (m *Migration[O, N]) confirmSource(ctx context.Context, pk, rk string) (version, error) {
	m.seams.afterCopyWrite(ctx, pk, rk)
	return m.readSource(ctx, pk, rk)
}

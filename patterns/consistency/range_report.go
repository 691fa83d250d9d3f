package consistency

import (
	"context"

	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// conditionSample is how many entities of a job's key range a page whose scan selected
// nothing reads to check its conditions (checkConditions): a condition that can match
// nothing (a misspelled property, a value of another type than the stored one) must not
// pass for a range with nothing to move.
const conditionSample = 100

// checkConditions returns the warnings of the job's conditions for a page (see
// rangejob.Plan.Warnings): on the entities its scan returned or, when the scan selected
// nothing, on a sample of the job's key range without the conditions (one query of
// conditionSample entities, the conditions' properties only). The warnings are logged.
func (a *Archiver) checkConditions(ctx context.Context, src *repo.Table[codec.Entity], p *rangePlan, found []codec.Entity) ([]string, error) {
	if len(p.Conditions()) == 0 {
		return nil, nil
	}
	es, what := found, "scanned"
	if len(found) == 0 {
		var err error
		es, err = src.Collect(ctx, repo.Query{Filter: p.Bounds(), Select: p.Select(), Top: conditionSample, FullMetadata: true})
		if err != nil {
			return nil, err
		}
		what = "of the key range sampled"
	}
	ws := p.Warnings(es, what)
	for _, w := range ws {
		a.opts.Logger.Warn("archive range: a condition can match nothing", zap.String("table", p.job.Source), zap.String("condition", w))
	}
	return ws, nil
}

// logPage logs what a page of a range job did: the entities its scan selected (matching
// the conditions), moved, skipped (the target cannot take them, or the job cannot
// address them) and left because they changed during their move.
func (a *Archiver) logPage(job ArchiveRangeJob, rep RangeReport, err error) {
	fields := []zap.Field{zap.String("table", job.Source), zap.String("targetTable", job.TargetTable), zap.String("targetContainer", job.TargetContainer),
		zap.Int("selected", rep.Scanned), zap.Int("moved", rep.Moved), zap.Int("skipped", len(rep.Skipped)), zap.Int("changed", len(rep.Changed)),
		zap.Bool("more", rep.Next != nil)}
	if err != nil {
		fields = append(fields, zap.Bool("failed", true))
	}
	a.opts.Logger.Info("archive range: page done", fields...)
}

package consistency

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo"
)

// conditionSample is how many entities of a job's key range a page whose scan selected
// nothing reads to check its conditions (sampleConditions): a condition that can match
// nothing (a misspelled property, a value of another type than the stored one) must not
// pass for a range with nothing to move.
const conditionSample = 100

// edmType names the EDM type of a property value as codec decodes it ("" for none).
func edmType(v any) string {
	switch v.(type) {
	case string:
		return "Edm.String"
	case int32:
		return "Edm.Int32"
	case int64:
		return "Edm.Int64"
	case float64:
		return "Edm.Double"
	case bool:
		return "Edm.Boolean"
	case time.Time:
		return "Edm.DateTime"
	case codec.GUID:
		return "Edm.Guid"
	case []byte:
		return "Edm.Binary"
	}
	return ""
}

// conditionWarnings checks the job's conditions against the entities es (a scan, or a
// sample of the key range, with the conditions' properties): a condition whose property
// never occurs in them, or occurs with another EDM type than the condition's (which
// never matches), gets a warning naming the condition, the types seen and the counts.
// Timestamp conditions are the service's own and always apply. Nothing is said about an
// empty es.
func (p *rangePlan) conditionWarnings(es []codec.Entity, what string) []string {
	if len(es) == 0 {
		return nil
	}
	var out []string
	for i, c := range p.where {
		if c.timestamp {
			continue
		}
		want := edmType(c.want)
		present, same := 0, 0
		others := map[string]int{}
		for j := range es {
			v, ok := es[j].Properties[c.property]
			if !ok {
				continue
			}
			present++
			if t := edmType(v); t == want {
				same++
			} else {
				others[t]++
			}
		}
		cond := fmt.Sprintf("where[%d] (%s %s %s)", i, c.property, c.op, want)
		switch {
		case present == 0:
			out = append(out, fmt.Sprintf("%s: property %s never occurs in the %d entities %s (misspelled?)", cond, c.property, len(es), what))
		case len(others) > 0:
			var seen []string
			for t, n := range others {
				seen = append(seen, fmt.Sprintf("%s in %d", t, n))
			}
			slices.Sort(seen)
			out = append(out, fmt.Sprintf("%s: property %s is stored as %v of the %d entities %s (%s in %d): a condition of type %s never matches another type",
				cond, c.property, seen, len(es), what, want, same, want))
		}
	}
	return out
}

// checkConditions returns the warnings of the job's conditions for a page (see
// conditionWarnings): on the entities its scan returned or, when the scan selected
// nothing, on a sample of the job's key range without the conditions (one query of
// conditionSample entities, the conditions' properties only). The warnings are logged.
func (a *Archiver) checkConditions(ctx context.Context, src *repo.Table[codec.Entity], p *rangePlan, found []codec.Entity) ([]string, error) {
	if len(p.where) == 0 {
		return nil, nil
	}
	es, what := found, "scanned"
	if len(found) == 0 {
		var err error
		es, err = src.Collect(ctx, repo.Query{Filter: p.bounds, Select: p.job.scanSelect(), Top: conditionSample, FullMetadata: true})
		if err != nil {
			return nil, err
		}
		what = "of the key range sampled"
	}
	ws := p.conditionWarnings(es, what)
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

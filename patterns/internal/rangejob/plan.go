package rangejob

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/repo/filter"
)

// Plan is a selection validated and compiled once per run: its conditions parsed (the
// re-check of every entity read compares with the parsed values) and its filter built
// (every scan of the run reuses it).
type Plan struct {
	sel   Selection
	where []filter.Compiled
	// filter is the key bounds and the conditions sent (filter.Compiled.Sent), without
	// the checkpoint.
	filter filter.Expr
	// bounds is the key bounds alone.
	bounds filter.Expr
}

// Plan validates the selection (see Validate) and compiles it.
//
// Errors: ErrInvalidInput naming the field.
func (s Selection) Plan() (*Plan, error) {
	if err := s.validateBounds(); err != nil {
		return nil, err
	}
	p := &Plan{sel: s, where: make([]filter.Compiled, 0, len(s.Where))}
	if s.PartitionKey != "" {
		p.bounds = filter.RowKeyRange(s.PartitionKey, s.RowKeyFrom, s.RowKeyTo)
	} else {
		p.bounds = filter.PartitionRange(s.PartitionKeyFrom, s.PartitionKeyTo)
	}
	parts := []filter.Expr{p.bounds}
	for i, c := range s.Where {
		cond, err := c.Compile(fmt.Sprintf("where[%d]", i))
		if err != nil {
			return nil, err
		}
		p.where = append(p.where, cond)
		if cond.Sent() {
			parts = append(parts, cond.Expr())
		}
	}
	p.filter = filter.And(parts...)
	if err := p.filter.Err(); err != nil {
		return nil, err
	}
	// Build the scan with a checkpoint, the largest filter a run sends.
	at := Key{PartitionKey: cmp.Or(s.PartitionKey, s.PartitionKeyFrom, "a"), RowKey: "a"}
	if s.After != nil {
		at = *s.After
	}
	if _, err := p.Scan(&at); err != nil {
		return nil, err
	}
	return p, nil
}

// Selection is the selection the plan was compiled from.
func (p *Plan) Selection() Selection { return p.sel }

// Filter is the selection's filter without the checkpoint: its key bounds and the
// conditions that are sent (filter.Compiled.Sent).
func (p *Plan) Filter() filter.Expr { return p.filter }

// Bounds is the selection's key bounds alone, the zero Expr for none.
func (p *Plan) Bounds() filter.Expr { return p.bounds }

// Conditions are the selection's Where conditions, compiled.
func (p *Plan) Conditions() []filter.Compiled { return p.where }

// Select is what a scan reads of each entity (Selection.Select).
func (p *Plan) Select() []string { return p.sel.Select() }

// CheckPosition checks a key a scan returned (Selection.CheckPosition).
func (p *Plan) CheckPosition(field string, k Key) error { return p.sel.CheckPosition(field, k) }

// Scan is the filter of the selection's entities after the checkpoint at (nil: from the
// start). The checkpoint adds at most three comparisons: Validate checked that they fit.
//
// Errors: ErrInvalidInput for a checkpoint the filter cannot carry.
func (p *Plan) Scan(at *Key) (filter.Expr, error) {
	if at == nil {
		return p.filter, nil
	}
	var after filter.Expr
	if p.sel.PartitionKey != "" {
		after = filter.Gt("RowKey", at.RowKey)
	} else {
		after = filter.Or(filter.Gt("PartitionKey", at.PartitionKey),
			filter.And(filter.PartitionKey(at.PartitionKey), filter.Gt("RowKey", at.RowKey)))
	}
	e := filter.And(p.filter, after)
	return e, e.Err()
}

// Matches re-checks every condition of the selection on an entity read from storage
// (filter.Compiled.Matches): what a query returned beyond them is never acted on.
func (p *Plan) Matches(e *codec.Entity) bool {
	for _, c := range p.where {
		if !c.Matches(e) {
			return false
		}
	}
	return true
}

// Warnings checks the selection's conditions against the entities es (a scan, or a
// sample of the key range, with the conditions' properties; what says which in the
// text): a condition whose property never occurs in them, or occurs with another EDM
// type than the condition's (which never matches), gets a warning naming the condition,
// the types seen and the counts. Timestamp conditions are the service's own and always
// apply. Nothing is said about an empty es.
func (p *Plan) Warnings(es []codec.Entity, what string) []string {
	if len(es) == 0 {
		return nil
	}
	var out []string
	for i, c := range p.where {
		if c.IsTimestamp() {
			continue
		}
		want := c.Type()
		present, same := 0, 0
		others := map[string]int{}
		for j := range es {
			v, ok := es[j].Properties[c.Property()]
			if !ok {
				continue
			}
			present++
			if t := filter.EDMType(v); t == want {
				same++
			} else {
				others[t]++
			}
		}
		cond := fmt.Sprintf("where[%d] (%s %s %s)", i, c.Property(), c.Op(), want)
		switch {
		case present == 0:
			out = append(out, fmt.Sprintf("%s: property %s never occurs in the %d entities %s (misspelled?)", cond, c.Property(), len(es), what))
		case len(others) > 0:
			var seen []string
			for t, n := range others {
				seen = append(seen, fmt.Sprintf("%s in %d", t, n))
			}
			slices.Sort(seen)
			out = append(out, fmt.Sprintf("%s: property %s is stored as %v of the %d entities %s (%s in %d): a condition of type %s never matches another type",
				cond, c.Property(), seen, len(es), what, want, same, want))
		}
	}
	return out
}

package migrate

import (
	"regexp"
	"slices"
	"strings"

	"github.com/tablepatterns/tablepatterns/internal/errs"
)

// Whose record it is. One record serves every migration of a source table, re-keying
// and schema alike, so a migration owns it only when both its name and its kind match:
// a schema migration never moves a re-keying migration's record that carries its name,
// nor the other way round (TestSchemaAndReKeyingMigrationsOfOneTableRefusedAtOnceUnderOneName).
//
// A migration that ended stays deployed for a while, and Plan of the next migration
// of the table replaces its record. A Done migration must keep following Done's rules
// then (its processes write the new layout, or the latest version), which nothing in the
// next migration's record would say. So Plan moves the outcome of the record it
// replaces (name, kind, final stage) into the record's Ended list, each write carries the
// list forward, and a migration that finds its name there follows its final stage
// (TestSchemaWritesTheLatestOnceDoneEvenAfterAnotherMigrationOfTheTableEnded). The list
// keeps the last keptEnded outcomes: a team retires an ended migration from its code
// before that many more migrations of the table were planned.

// The kinds of migration a record names (record.Kind).
const (
	kindRekey  = "rekey"
	kindSchema = "schema"
)

// keptEnded is how many ended migrations' outcomes the record keeps.
const keptEnded = 8

var endedRE = regexp.MustCompile(`^` + endedEntry + `(,` + endedEntry + `){0,7}$`)

const endedEntry = `[a-z][a-z0-9-]{0,62}:(rekey|schema):(done|aborted)`

// checkKind validates the record's Kind: untrusted, like the rest of it.
func checkKind(k string) error {
	if k != kindRekey && k != kindSchema {
		return errs.Invalid("state record", "Kind %q is not a kind of migration", clip(k))
	}
	return nil
}

// endedOutcomes validates the record's Ended list: "name:kind:stage" entries, newest
// first.
func endedOutcomes(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	if !endedRE.MatchString(s) {
		return nil, errs.Invalid("state record", "Ended is not a list of ended migrations")
	}
	return strings.Split(s, ","), nil
}

// outcomeOf returns the final stage the list records for the migration (name, kind).
func outcomeOf(ended []string, name, kind string) (Stage, bool) {
	for _, e := range ended {
		if n, rest, _ := strings.Cut(e, ":"); n == name {
			if k, stage, _ := strings.Cut(rest, ":"); k == kind {
				return Stage(stage), true
			}
		}
	}
	return "", false
}

// endedWith is the list a Plan of (name, kind) writes over the record st was read from:
// the replaced record's outcome first when it is another migration's, then those read,
// without any of (name, kind), which is live again.
func endedWith(st State, name, kind string) string {
	drop := []string{name + ":" + kind + ":"}
	out := make([]string, 0, keptEnded)
	if st.holder != "" && st.holder != name+":"+kind && (st.rec == Done || st.rec == Aborted) {
		out = append(out, st.holder+":"+string(st.rec))
		drop = append(drop, st.holder+":")
	}
	for _, e := range st.ended {
		dropped := slices.ContainsFunc(drop, func(p string) bool { return strings.HasPrefix(e, p) })
		if !dropped && len(out) < keptEnded {
			out = append(out, e)
		}
	}
	return strings.Join(out, ",")
}

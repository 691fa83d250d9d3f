// Package heterogeneous implements the Azure Table storage design guide's heterogeneous
// entity types and its one-to-many relationship in one partition ("Work with
// heterogeneous entity types", "One-to-many relationships" and "Inheritance
// relationships"): several entity types in one table, told apart by a discriminator, read
// with one query into their own Go types, and written together in entity group
// transactions.
//
// The algorithm: onetomany.go
//
// That file holds the one-to-many relationship, the part of the pattern whose order
// matters: a child and its parent's count written in one transaction, conditional on what
// was read. Every entity it writes carries its type (write.go, through the registry) and
// every read decodes each entity into its own type (table.go). Beside them, outcome.go
// decides a transaction whose answer was lost, relationship.go builds the relationship,
// and seams.go holds the one test seam.
//
// # The problem
//
// Table storage is schemaless: one table, even one partition, can hold departments and
// their employees. That is what makes an entity group transaction across them possible
// (the department's EmployeeCount updated with each employee inserted or deleted), and
// one query can read a department with its employees. But nothing in an entity says which
// type it is, and a typed client decodes every entity into one type.
//
// # The solution
//
// Record the type in every entity — in a property (the guide's EntityType, the default)
// or as the prefix of the RowKey or PartitionKey ("EMPLOYEE_000123") — with a
// codec.Registry, and write every entity through it:
//
//	table, _ := repo.New[codec.Entity](clients.Tables, "Company", nil)
//	t, _ := heterogeneous.New(table, nil)
//	heterogeneous.Register[Department](t, "Department")
//	heterogeneous.Register[Employee](t, "Employee")
//	for v, err := range t.Query(ctx, repo.Query{Filter: filter.PartitionKey("Sales")}) {
//		switch v := v.(type) {
//		case *Department: ...
//		case *Employee:   ...
//		}
//	}
//
// This is the guide's EntityResolver, typed. Writes (Insert, Update, ..., and the actions
// of Submit) go through the registry, so that a Replace can never drop the discriminator
// (which a plain repo.Table[Employee] update would do: its type does not know the
// property). QueryOf reads one type and filters on the discriminator at the service; Get
// reads one entity and fails with a *TypeMismatchError when it is of another type
// (TestOneQueryDecodesEachType). The type read back is untrusted: for Get, a
// discriminator naming another registered type, none, an unregistered one or a non-string
// is a *TypeMismatchError (TestForgedDiscriminatorIsATypeMismatch), and entities of types
// nobody registered are reported, or passed through as *codec.Entity on request
// (TestUnknownTypes).
//
// On a table with write tracking (repo.Options.TrackWrites), the write history belongs to
// the table: no registered type and no discriminator may take its property, and no read
// shows it, not even to a type with an extra map (TestTrackingPropertyBelongsToTheTable,
// TestExtraMapNeverCapturesTheWriteHistory, TestDiscriminatorCannotBeTheTrackingProperty).
//
// OneToMany is the guide's first approach to one-to-many relationships: the parent
// (department) and its children (employees) in one partition, the parent holding their
// number:
//
//	depts, _ := heterogeneous.NewOneToMany[Department, Employee](t,
//		func(pk string) string { return "DEPARTMENT" }, func(d *Department) *int32 { return &d.EmployeeCount })
//	err := depts.Add(ctx, &Employee{Department: "Sales", EmployeeID: "000123", ...})
//	err = depts.Delete(ctx, "Sales", "000123", nil)
//	dept, staff, err := depts.Load(ctx, "Sales") // one query
//
// # Consistency
//
// Each promise of order or atomicity below names, in parentheses, the test that holds it
// at its narrowest window (a request held at a fault proxy while the competing
// operation runs to completion, so the interleaving is exact).
//
// Add and Delete write the child and the parent's count in one entity group transaction,
// conditional on the parent's ETag (and, for Delete, the child's): the count always
// equals the number of children written through them, whatever the concurrency, and a
// failure or a crash at any point leaves both unchanged or both changed
// (TestAddUnderFaults, TestEmployeeCountFollowsAddsAndDeletes). A writer that loses the
// race on the parent's ETag re-reads it and retries with the jittered backoff, so
// concurrent adds lose no increment (TestOneToManyWindowConcurrentAdd holds an Add's
// transaction while another Add and a Delete commit; TestConcurrentAddsLoseNoIncrement).
// Children written around OneToMany (imports) make the count wrong; Recount repairs it,
// counting and updating conditional on the parent's ETag so that a concurrent Add makes
// it count again (TestRecountWindowConcurrentAdd).
//
// When repo cannot prove the outcome of a transaction (errs.ErrOutcomeUnknown: a lost
// response, then a retry that met a conflict), Add and Delete read again the entities the
// atomic transaction would have changed and decide with repo.DecideOutcome: one still at
// the version read proves nothing landed, and the call starts over; anything else returns the
// errs.ErrOutcomeUnknown error (never errs.ErrAlreadyExists or errs.ErrNotFound, "nothing
// written", and never success), since a child found or not found may be another writer's
// doing since (TestOneToManyOutcomeUnknownIsRedecided,
// TestOneToManyAddNeverReinsertsAChildRemovedByAnotherWriter,
// TestOneToManyDeleteNeverDeletesAChildReaddedByAnotherWriter,
// TestOneToManyAddStartsOverWhenTheParentIsUnchanged). Recount simply counts
// again: its count is derived from the children it reads. Turn on repo.Options.TrackWrites
// to have repo recognise its own write exactly.
//
// On a store that cannot delete a key holding U+2028 or U+2029 inside a transaction
// (Azurite; see package tabletest) Delete's delete of a child whose key holds one goes in
// a request of its own right after the transaction (repo.SubmitOrSplit): there, and only
// there, readers may see the transaction's writes before that delete, and a process that
// stops between the two leaves the count one below the children. The service never takes
// that path (TestDeleteRemovesChildWhenKeyHasLineSeparator); Recount repairs the count.
// Table.Submit stays atomic: on such a store it returns the
// *repo.MisaddressedDeleteError.
//
// The guide's limits of this approach hold: a child cannot move to another parent (another
// partition) in a transaction, and a busy parent is a hot spot of its partition. Every
// child write updates the parent, so one parent takes a few hundred writes per second at
// most under contention.
//
// # Cost in requests
//
// Query and Load: one request per 1,000 entities. Get: one point query. Add: one read
// and one transaction; Delete: two reads and one transaction; each more when another
// writer wins the race. Recount: one read, one query of the children's keys, and one
// update if the count was wrong.
//
// # Errors
//
// The sentinels these docs name (errs.ErrNotFound, errs.ErrPreconditionFailed,
// errs.ErrInvalidInput, ...) are those of package
// github.com/tablepatterns/tablepatterns/errs: test them with errors.Is. Bad input is
// refused with errs.ErrInvalidInput before any request (TestInvalidInputSendsNothing).
package heterogeneous

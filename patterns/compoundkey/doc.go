// Package compoundkey implements the compound key pattern of the table design guide
// (the Azure Table storage design guide and its newer edition, "Table design patterns", "compound key pattern"; keys are built by package keys, after
// the Tablestore key design guide's concatenated keys): related entities found with one range query, because
// their RowKeys share a prefix.
//
// # The problem
//
// A relational database returns an employee's yearly reviews with a join. Table storage
// has no join, and a separate reviews table cannot be updated atomically with the
// employee, nor read in the same request.
//
// # The solution
//
// Store the reviews in the employee's table and partition, as another entity type, under a
// compound RowKey made of the employee id and the year:
//
//	PartitionKey  RowKey               properties
//	Sales         empid_000123         FirstName LastName Age Email
//	Sales         empid_000123_2012    ManagerRating PeerRating Comments
//	Sales         empid_000123_2013    ManagerRating PeerRating Comments
//
// A Layout builds and parses such keys ("empid", 2 parts); a Table reads and writes the
// entities of one layout:
//
//	reviews, _ := compoundkey.New(reviewRows, compoundkey.MustLayout("empid", 2, nil), nil)
//	rk, _ := reviews.Layout().Key("000123", "2012")            // "empid_000123_2012"
//	for r, err := range reviews.List(ctx, "Sales", "000123") { // every review of 000123
//
// List is one range query with a $select of the review type's properties: the guide's
// "$filter=(PartitionKey eq 'Sales') and (RowKey ge 'empid_000123') and (RowKey lt
// 'empid_000124')&$select=RowKey,Manager Rating,Peer Rating,Comments", with exact bounds:
// "empid_000123_" to "empid_000123`", so that neither the employee row "empid_000123" nor
// the reviews of "empid_0001234" fall in the range (TestListReviewsOfOneEmployee).
//
// The algorithm: compoundkey.go
//
// It builds a key from its parts, parses it back, bounds a range of them, and sends the
// guide's requests on those keys; layout.go builds a Layout, table.go a Table.
//
// The readable "_" of the guide needs parts without "_" and of fixed width (pad numbers
// with keys.Pad) to keep their order; LayoutOptions.Escaped selects the escaped encoding
// of package keys, which takes any parts and keeps their order.
//
// # Consistency
//
// Each entity is written by one request. Because the reviews share the employee's
// partition, InsertAction, UpsertAction and DeleteAction put them in one entity group
// transaction with the employee (repo.Submit): strong consistency between an employee and
// its reviews, which separate tables cannot give (the Azure Table storage design guide,
// issues and considerations; TestReviewAndEmployeeInOneTransaction). A RowKey that does
// not follow the layout is refused before anything is sent (TestWrongKeysSendNothing).
//
// Get, Delete and DeleteAction take the entity's keys as every pattern of this module
// does, the partition and then the row, with the parts standing for the RowKey they make:
// Get(ctx, "Sales", []string{"000123", "2012"}) and Delete(ctx, pk, parts, opts). The parts
// are one argument, a slice, so that the options come last as everywhere else; List,
// which takes a prefix of any length rather than a key, keeps its variadic leading parts.
//
// DeleteAction without opts.ETag is unconditional. repo.Submit reads the ETag of an entity whose key holds
// U+2028 or U+2029 before deleting it, since Azurite would delete another row in its
// place; on Azurite such a transaction then fails with repo.ErrDeleteMisaddressed, and
// repo.SubmitOrSplit deletes the review apart instead
// (TestDeleteActionNeverDeletesAnotherRowWhenPartHasLineSeparator).
//
// # Cost in requests
//
// Get: one point query. List: one range query per 1,000 entities, transferring only the
// selected properties. Writes: one request, or one transaction for related entities.
//
// # Issues and considerations
//
//   - The partition now holds the employee and all its reviews: if reviews are read
//     rarely and the employee often, the guide suggests separate entities anyway.
//   - Choose a separator that makes keys easy to parse and keep the parts' widths fixed.
//
// # Errors
//
// The sentinels these docs name (errs.ErrNotFound, errs.ErrPreconditionFailed,
// errs.ErrInvalidInput, ...) are those of package
// github.com/tablepatterns/tablepatterns/errs: test them with errors.Is.
package compoundkey

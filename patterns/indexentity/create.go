package indexentity

import "context"

// creator is a Store that can create what it keeps its lists in (BlobStore and TableStore
// can).
type creator interface {
	CreateIfNotExists(ctx context.Context) error
}

// CreateIfNotExists creates the table of TableStore's index entities; an existing table
// is success.
//
// Errors: as repo.Table.CreateIfNotExists.
func (s *TableStore) CreateIfNotExists(ctx context.Context) error {
	return s.pages.tbl.CreateIfNotExists(ctx)
}

// CreateIfNotExists creates the primary table and what the store keeps its lists in
// (TableStore's table, BlobStore's container; a Store of another type that has a
// CreateIfNotExists(ctx) error method is asked to create its own); existing ones are
// success. The job queue is the queueworker.Client's: create it with
// queueworker.CreateQueueIfNotExists.
//
// Errors: as repo.Table.CreateIfNotExists and the store's CreateIfNotExists.
func (ix *Eventual[T]) CreateIfNotExists(ctx context.Context) error {
	if err := ix.primary.CreateIfNotExists(ctx); err != nil {
		return err
	}
	if c, ok := ix.store.(creator); ok {
		return c.CreateIfNotExists(ctx)
	}
	return nil
}

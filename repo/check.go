package repo

import "github.com/tablepatterns/tablepatterns/internal/errs"

// CheckOptions returns the error New would return for opts and entities of type T, whatever
// the (valid) table name, without building a table: for owners of many tables
// (patterns/periodtable) that check their tables' options once, at construction, and build
// each table later by name. An Options.Encryption bound to a table (Encryption.Table) is
// therefore refused: New refuses it for every other name. Such an owner binds each table
// to its own name when it builds it. It sends nothing.
//
// Errors: ErrInvalidInput (an *InvalidInputError) as New: invalid options, a bound
// Encryption, a T codec cannot map, or a T with encrypted fields and no Options.Encryption.
func CheckOptions[T any](opts *Options) error {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return err
	}
	if o.Encryption != nil && o.Encryption.Table != "" {
		return errs.Invalid("Options.Encryption.Table", "binds entities to table %q, and New refuses it for every other table: leave it empty and bind each table to its own name when building it", o.Encryption.Table)
	}
	_, err := codecFor[T](o)
	return err
}

package repo

// CheckOptions returns the error New would return for opts and entities of type T, without
// building a table: for owners of many tables (patterns/periodtable) that check their
// tables' options once, at construction, and build each table later by name. It sends
// nothing.
//
// Errors: ErrInvalidInput (an *InvalidInputError) as New: invalid options, a T codec cannot
// map, or a T with encrypted fields and no Options.Encryption.
func CheckOptions[T any](opts *Options) error {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return err
	}
	_, err := codecFor[T](o)
	return err
}

package heterogeneous

// seams is the one thing tests set on a OneToMany (see export_test.go): afterSubmit
// replaces the answer of each transaction, to play the answers of a retried transaction
// whose first attempt landed.
type seams struct {
	afterSubmit func(err error) error
}

// answer is the transaction's answer err as the seam, if set, replaces it.
func (s seams) answer(err error) error {
	if s.afterSubmit == nil {
		return err
	}
	return s.afterSubmit(err)
}

package heterogeneous

// SetAfterSubmit makes r pass the outcome of each of its transactions through f, so that
// tests can play the answers of a retried transaction whose first attempt landed.
func SetAfterSubmit[P, C any, N Count](r *OneToMany[P, C, N], f func(error) error) {
	r.seams.afterSubmit = f
}

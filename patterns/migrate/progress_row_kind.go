package migrate

// runsKindAt reports whether kind is the kind of this migration's range jobs at stage
// (a re-keying's or a schema migration's): a progress row of any other kind in the run
// of stage was written by no job of it.
func (m *Migration[O, N]) runsKindAt(kind string, stage Stage) bool {
	stages := jobStage
	if m.kind == kindSchema {
		stages = schemaJobStage
	}
	s, ok := stages[kind]
	return ok && s == stage
}

package consistency

import (
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/tablepatterns/tablepatterns/codec"
	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// "A restore writes nothing unless every chosen generation matches its manifest ...
// remaining window: none". Restore -generation all verifies every generation, then
// writes them one after the other, reading each If-Match the ETag it verified. A data
// blob of the second generation replaced after the verification (the window the If-Match
// is meant to close) is caught only after the first generation has been written: the
// target holds a partial restore, and the job is poisoned as corrupt.
func TestAttackRestoreAllWritesBeforeLaterGenerationFails(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	container := testenv.ContainerName(t)
	name := b.current.Name()
	job := ArchiveTableJob{Table: name, Container: container, Sealed: true}
	fillTable(t, b, name, 300, "a")
	if _, err := b.a.ArchiveTable(b.ctx, job); err != nil {
		t.Fatal(err)
	}
	fillTable(t, b, name, 5, "late")
	rep2, err := b.a.ArchiveTable(b.ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	target := b.archive
	r := b.another(t)
	r.step = func(_, s string) error {
		if s == "verified" {
			// Someone replaces the second generation's data after the verification.
			if _, err := b.clients.Blobs.UploadBuffer(b.ctx, container, rep2.Manifest.DataBlob, gzipBytes(t, []byte("{}\n")), &azblob.UploadBufferOptions{}); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	_, err = r.RestoreTable(b.ctx, RestoreTableJob{Table: name, Container: container, Target: target.Name(), Generation: GenerationAll})
	got, cerr := target.Collect(b.ctx, repo.Query{})
	if cerr != nil {
		t.Fatal(cerr)
	}
	if !errors.Is(err, ErrArchiveCorrupt) {
		t.Fatalf("restore: %v, want ErrArchiveCorrupt", err)
	}
	if len(got) != 0 {
		t.Fatalf("the restore failed as corrupt (%v) after writing %d entities (the whole first generation) into %s", err, len(got), target.Name())
	}
	_ = codec.Entity{}
}

package tablearchive

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/repo"
)

// "A restore writes nothing unless every chosen generation matches its manifest ...
// remaining window: none". Restore -generation all verified every generation, then wrote
// them one after the other, reading each If-Match the ETag it verified. A data blob of
// the second generation replaced after the verification was caught only after the first
// generation had been written: a partial restore, poisoned as corrupt. Now the restore
// verifies snapshots and writes from them: what it writes is exactly what it verified
// (every entity of both generations, none of the replacement), and it leaves no snapshot
// behind.
func TestRestoreAllWritesBeforeLaterGenerationFails(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	cont := testenv.ContainerName(t)
	name := b.current.Name()
	job := ArchiveTableJob{Table: name, Container: cont, Sealed: true}
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
	replaced := false
	r.seams.step = func(_, s string) error {
		if s == "verified" {
			// Someone replaces the second generation's data after the verification.
			if _, err := b.clients.Blobs.UploadBuffer(b.ctx, cont, rep2.Manifest.DataBlob, gzipBytes(t, []byte("{}\n")), &azblob.UploadBufferOptions{}); err != nil {
				t.Error(err)
			}
			replaced = true
		}
		return nil
	}
	_, err = r.RestoreTable(b.ctx, RestoreTableJob{Table: name, Container: cont, Target: target.Name(), Generation: GenerationAll})
	got, cerr := target.Collect(b.ctx, repo.Query{})
	if cerr != nil {
		t.Fatal(cerr)
	}
	if !replaced {
		t.Fatal("the restore never reached its verified step")
	}
	if err != nil || len(got) != 305 {
		t.Fatalf("restore: %v; %d entities written, want all 305 that were verified", err, len(got))
	}
	for _, e := range got {
		if tag := e.Properties["Tag"]; tag != "a" && tag != "late" {
			t.Fatalf("an entity not in the verified data: %+v", e)
		}
	}
	pager := b.clients.Blobs.NewListBlobsFlatPager(cont, &azblob.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Snapshots: true}})
	for pager.More() {
		page, err := pager.NextPage(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Segment.BlobItems {
			if it.Snapshot != nil && *it.Snapshot != "" {
				t.Errorf("snapshot left behind: %s@%s", *it.Name, *it.Snapshot)
			}
		}
	}
}

package app_test

import (
	"strings"
	"testing"

	"github.com/tablepatterns/tablepatterns/internal/testenv"
	"github.com/tablepatterns/tablepatterns/patterns/tablearchive"
	"github.com/tablepatterns/tablepatterns/repo/account"
)

// archiver sweep: a data blob without a manifest that is younger than -older-than may be
// a running export's: it is listed by neither the dry run nor the sweep, and stays.
func TestSweepKeepsYoungOrphans(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clients, err := account.NewClients(testenv.ConnectionString(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	container := testenv.ContainerName(t)
	if _, err := clients.Blobs.CreateContainer(ctx, container, nil); err != nil {
		t.Fatal(err)
	}
	orphan := tablearchive.DataBlobName("SignIns20240101", "20240102T000000.0000000Z-0a0b0c0d")
	if _, err := clients.Blobs.UploadBuffer(ctx, container, orphan, []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		args := []string{"sweep", "-table", "SignIns20240101", "-container", container, "-older-than", "1h"}
		if dry {
			args = append(args, "-dry-run")
		}
		code, out, stderr := archiver(t, args...)
		if code != 0 || !strings.Contains(out, "0 aborted export(s)") {
			t.Fatalf("%q: exit %d\n%s\n%s", args, code, out, stderr)
		}
	}
	if _, err := clients.Blobs.DownloadStream(ctx, container, orphan, nil); err != nil {
		t.Fatalf("the young orphan was deleted: %v", err)
	}
}

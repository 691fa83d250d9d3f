package testenv_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The packages under the module's internal/ are the lowest layer: every package of ours,
// public tabletest included, may use them, so they import none of ours but each other.
// Test files are exempt; they may exercise a public package.
func TestInternalPackagesImportOnlyInternalPackages(t *testing.T) {
	t.Parallel()
	const mod = "github.com/tablepatterns/tablepatterns"
	root := filepath.Join("..") // the module's internal/ directory
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		n++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if (p == mod || strings.HasPrefix(p, mod+"/")) && !strings.HasPrefix(p, mod+"/internal/") {
				t.Errorf("%s imports %s: an internal package imports a higher layer", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("no Go files under %s", root)
	}
}

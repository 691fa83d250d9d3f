package main

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every example program imports only public packages, so that a team can copy it into
// its own module and run it there.
func TestEveryExampleImportsOnlyPublicPackages(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "github.com/tablepatterns/tablepatterns/") && (strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal")) {
				t.Errorf("%s imports %s: it cannot be copied into another module", name, path)
			}
		}
	}
	if checked < 16 {
		t.Fatalf("checked %d example files, want every example's", checked)
	}
}

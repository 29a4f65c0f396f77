package deptest

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docRef is a document a comment cites: a name ending in ".md", perhaps
// with a path. A reference preceded by "://" is a URL and not checked.
var docRef = regexp.MustCompile(`(://\S*)?\b([A-Za-z0-9_./-]*[A-Za-z0-9_-]+\.md)\b`)

// archSection is a citation of a section of ARCHITECTURE.md.
var archSection = regexp.MustCompile(`ARCHITECTURE\.md, "([^"]+)"`)

// TestCommentReferencesResolve: every document a code comment cites is a
// file of this repository (relative to the root, to the citing package, or
// as the tail of a path in the repository), and every cited section of
// ARCHITECTURE.md is one of its headings. Documents outside the repository
// are cited only as URLs.
func TestCommentReferencesResolve(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var mds []string
	var gofiles []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case strings.HasSuffix(p, ".md"):
			mds = append(mds, filepath.ToSlash(rel))
		case strings.HasSuffix(p, ".go"):
			gofiles = append(gofiles, p)
		}
		return nil
	})
	arch, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, l := range strings.Split(string(arch), "\n") {
		if strings.HasPrefix(l, "#") {
			headings[strings.TrimSpace(strings.TrimLeft(l, "#"))] = true
		}
	}
	resolves := func(dir, ref string) bool {
		if _, err := os.Stat(filepath.Join(root, ref)); err == nil {
			return true
		}
		if _, err := os.Stat(filepath.Join(dir, ref)); err == nil {
			return true
		}
		for _, m := range mds {
			if m == ref || strings.HasSuffix(m, "/"+ref) {
				return true
			}
		}
		return false
	}
	fset := token.NewFileSet()
	for _, f := range gofiles {
		af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, cg := range af.Comments {
			text := cg.Text()
			pos := fset.Position(cg.Pos())
			for _, m := range docRef.FindAllStringSubmatch(text, -1) {
				if m[1] != "" {
					continue // a URL
				}
				if !resolves(filepath.Dir(f), m[2]) {
					t.Errorf("%s:%d: comment cites %s, which is not a file of this repository", pos.Filename, pos.Line, m[2])
				}
			}
			for _, m := range archSection.FindAllStringSubmatch(text, -1) {
				if !headings[m[1]] {
					t.Errorf("%s:%d: comment cites ARCHITECTURE.md section %q, which it does not have", pos.Filename, pos.Line, m[1])
				}
			}
		}
	}
}

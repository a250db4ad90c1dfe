package toolsearch

import (
	"slices"
	"testing"
)

func names(docs []Doc, hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, docs[h.Doc].Name)
	}
	return out
}

func TestScenario_NameWordsOutrankProseAndVerbsMeetTheirSynonyms(t *testing.T) {
	docs := []Doc{
		DocOf("gh__create_issue", "Open a new issue in a repository.", []byte(`{"properties":{"repo":{},"title":{"description":"issue title"}}}`)),
		DocOf("gh__delete_issue", "Delete an issue of a repository.", []byte(`{"properties":{"repo":{},"number":{}}}`)),
		DocOf("gh__list_issues", "List the issues of a repository.", []byte(`{"properties":{"repo":{}}}`)),
		DocOf("fs__readTextFile", "Read the contents of a file as text.", []byte(`{"properties":{"path":{}}}`)),
		DocOf("fs__move_file", "Move or rename files.", []byte(`{"properties":{"source":{},"destination":{}}}`)),
		DocOf("notes__search", "Search notes mentioning an issue or a file.", nil),
	}
	ix := New(docs)
	for _, c := range []struct {
		query string
		want  string
	}{
		{"file a new issue", "gh__create_issue"},
		{"remove an issue", "gh__delete_issue"},
		{"read text files", "fs__readTextFile"}, // camelCase and plurals
		{"rename a file", "fs__move_file"},
		{"all issues in a repository", "gh__list_issues"},
		{"destination of a move", "fs__move_file"}, // parameter names count
	} {
		got := names(docs, ix.Search(c.query, 2))
		if len(got) == 0 || got[0] != c.want {
			t.Errorf("%q: %v, want %s first", c.query, got, c.want)
		}
	}
	if got := ix.Search("the of and", 5); got != nil {
		t.Errorf("stop words alone match %v", names(docs, got))
	}
	if got := ix.Search("kubernetes", 5); got != nil {
		t.Errorf("an unknown word matches %v", names(docs, got))
	}
	if got := ix.Search("issue", 2); len(got) != 2 {
		t.Errorf("limit 2 gave %d hits", len(got))
	}
}

func TestTerms_StemsMeet(t *testing.T) {
	for _, group := range [][]string{
		{"files", "file", "filed"},
		{"create", "created", "creating", "creates"},
		{"entities", "entity"},
		{"boxes", "box"},
	} {
		var stems []string
		for _, w := range group {
			stems = append(stems, Terms(w)...)
		}
		if len(slices.Compact(stems)) != 1 {
			t.Errorf("%v stem to %v", group, stems)
		}
	}
	if got := Terms("readTextFile get-sum KEY__tool"); /* "tool" is a stop word */ !slices.Equal(got, []string{"read", "text", "fil", "get", "sum", "key"}) {
		t.Errorf("split: %v", got)
	}
}

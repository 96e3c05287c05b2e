package tools

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The benchmark figures of README.md and of the pages under docs/ are held
// to the result files the make targets write under bench/results/
// (compare-*.txt, e2e-*.txt, guard-*.txt, recovery-*.txt,
// control-plane-*.txt, scale-*.txt, scale-sim-*.txt, programs-*.txt,
// kwok-race-*.txt). The figures checked, as docs/benchmarks.md says:
//
//   - every block of a page (a paragraph or a list item) that names a
//     result file, bench/results/<kind>-<UTC>.txt: each of its figures must
//     appear in one of the files it names;
//   - every table right after a block that names result files: each of its
//     figures must appear in one of those files;
//   - every other table of a section whose "## " heading names a bench
//     target (`make bench-compare`, `make bench-e2e`, down to the next "## "
//     heading): each of its figures must appear in the newest result file of
//     that target (compare-*, e2e-*).
//
// A figure is a number standing alone (digits, thousands commas, a decimal
// part, maybe an x or × after it); numbers inside words, versions, issue
// numbers, commands in backticks (`make ...`, `go ...`) and the file names
// themselves are not figures. Commas are dropped before comparing, so
// 24,972 in a page matches 24972 in a file.

const (
	repoRoot   = ".."
	resultsDir = "../bench/results"
)

// figuresRequired are the pages that must hold checked figures, from the
// repository's root; every page under docs/ is checked too.
var figuresRequired = []string{"README.md", "docs/benchmarks.md"}

// sectionKinds maps the bench target a "## " heading names to the kind of
// result file its tables are held to.
var sectionKinds = map[string]string{
	"`make bench-compare`": "compare",
	"`make bench-e2e`":     "e2e",
}

var (
	resultFileRE = regexp.MustCompile(`bench/results/((compare|e2e|guard|recovery|control-plane|scale|scale-sim|programs|kwok-race)-\d{8}T\d{6}Z\.txt)`)
	figureRE     = regexp.MustCompile(`(^|[^\w.\-/#:=])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:x|×|k)?(?:$|[^\w])`)
	commandRE    = regexp.MustCompile("`(?:make|go|cd) [^`]*`")
)

// figures returns the figures of text, commas dropped, in order.
func figures(text string) []string {
	text = resultFileRE.ReplaceAllString(text, " ")
	text = commandRE.ReplaceAllString(text, " ")
	var out []string
	// Matches may share a boundary character, so scan one at a time.
	for rest := text; ; {
		m := figureRE.FindStringSubmatchIndex(rest)
		if m == nil {
			return out
		}
		num := rest[m[4]:m[5]]
		if m[6] >= 0 {
			num += rest[m[6]:m[7]]
		}
		out = append(out, strings.ReplaceAll(num, ",", ""))
		rest = rest[m[5]:]
	}
}

// figureSet returns the figures of a result file as a set.
func figureSet(t *testing.T, name string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(resultsDir, name))
	if err != nil {
		t.Fatalf("reading the result file a page names: %v", err)
	}
	set := map[string]bool{}
	for _, f := range figures(string(b)) {
		set[f] = true
	}
	return set
}

// newestResult returns the newest result file of kind, by its UTC name.
func newestResult(t *testing.T, kind string) string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(resultsDir, kind+"-*.txt"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no %s result file under %s (%v)", kind, resultsDir, err)
	}
	sort.Strings(names)
	return filepath.Base(names[len(names)-1])
}

// pageBlock is a paragraph, list item or table of a page, with the line it
// starts at and the section it sits in.
type pageBlock struct {
	line    int
	lines   []string
	table   bool
	section string // "compare", "e2e" or "" outside the benchmark sections
}

// pageBlocks splits a page into blocks: a blank line, a heading, a list
// item and the start or end of a table each start a new one.
func pageBlocks(text string) []pageBlock {
	var blocks []pageBlock
	var cur *pageBlock
	section, fence := "", false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
			cur = nil
			continue
		}
		switch {
		case fence:
			continue
		case strings.HasPrefix(line, "## "):
			section = ""
			for target, kind := range sectionKinds {
				if strings.Contains(line, target) {
					section = kind
				}
			}
		}
		isTable := strings.HasPrefix(line, "|")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			cur = nil
			continue
		}
		if cur == nil || cur.table != isTable || (!isTable && strings.HasPrefix(line, "- ")) {
			blocks = append(blocks, pageBlock{line: i + 1, table: isTable, section: section})
			cur = &blocks[len(blocks)-1]
		}
		cur.lines = append(cur.lines, line)
	}
	return blocks
}

// TestDocFigures_InResultFiles checks the figures of README.md and of
// every page under docs/ against the result files, as the comment at the
// top of this file says.
func TestDocFigures_InResultFiles(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages := []string{"README.md"}
	for _, d := range docs {
		pages = append(pages, "docs/"+filepath.Base(d))
	}
	for _, page := range figuresRequired {
		if !slices.Contains(pages, page) {
			t.Errorf("%s, whose figures are checked, is missing", page)
		}
	}
	for _, page := range pages {
		t.Run(page, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(page)))
			if err != nil {
				t.Fatal(err)
			}
			checked := checkPageFigures(t, page, string(b))
			if checked == 0 && slices.Contains(figuresRequired, page) {
				t.Errorf("no figure of %s was checked: the blocks that name result files were not found", page)
			}
		})
	}
}

// checkPageFigures checks the figures of page, whose text is text, and
// returns how many it checked.
func checkPageFigures(t *testing.T, page, text string) (checked int) {
	t.Helper()
	blocks := pageBlocks(text)
	for i, blk := range blocks {
		body := strings.Join(blk.lines, "\n")
		files := namedResults(body)
		if blk.table && len(files) == 0 {
			if i > 0 && !blocks[i-1].table {
				files = namedResults(strings.Join(blocks[i-1].lines, "\n"))
			}
			if len(files) == 0 && blk.section != "" {
				files = []string{newestResult(t, blk.section)}
			}
		}
		if len(files) == 0 {
			continue
		}
		sets := make([]map[string]bool, len(files))
		for j, f := range files {
			sets[j] = figureSet(t, f)
		}
		for _, fig := range figures(body) {
			checked++
			found := false
			for _, s := range sets {
				found = found || s[fig]
			}
			if !found {
				t.Errorf("%s:%d: %s is in none of %v", page, blk.line, fig, files)
			}
		}
	}
	return checked
}

// namedResults returns the result files text names.
func namedResults(text string) []string {
	var files []string
	for _, m := range resultFileRE.FindAllStringSubmatch(text, -1) {
		files = append(files, m[1])
	}
	return files
}

// TestDocFigures_Figures pins what counts as a figure.
func TestDocFigures_Figures(t *testing.T) {
	for text, want := range map[string]string{
		"heap per cached pod | 24,972 B | 8831 B |":               "24972 8831",
		"ratio 0.23× and 0.54x, 1.40 (p=0.008 n=5), GOGC=100":     "0.23 0.54 1.40",
		"client-go v0.37.2, kubernetes#87671, 1m0s":               "",
		"`make bench-e2e ARGS='-n 100000'` took 3 s":              "3",
		"bench/results/e2e-20261127T082003Z.txt: 60.1 s, -77.49%": "60.1",
		"bench/results/control-plane-20261128T090000Z.txt: 0.45x": "0.45",
	} {
		if got := strings.Join(figures(text), " "); got != want {
			t.Errorf("figures(%q) = %q, want %q", text, got, want)
		}
	}
}

package tools

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// README's benchmark figures are held to the result files the make targets
// write under bench/results/ (compare-*.txt, e2e-*.txt, guard-*.txt,
// recovery-*.txt, control-plane-*.txt). The
// figures checked, as README's "Benchmarks against client-go" says:
//
//   - every block of README.md (a paragraph or a list item) that names a
//     result file, bench/results/<kind>-<UTC>.txt: each of its figures must
//     appear in one of the files it names;
//   - every table under the "## Benchmarks against client-go" heading (down
//     to the next "## " heading): each of its figures must appear in the
//     file named by the block just before the table or, when that block
//     names none, in the newest result file of the section's kind (compare
//     under "## Benchmarks against client-go", e2e under its "### Memory"
//     heading).
//
// A figure is a number standing alone (digits, thousands commas, a decimal
// part, maybe an x or × after it); numbers inside words, versions, issue
// numbers, commands in backticks (`make ...`, `go ...`) and the file names
// themselves are not figures. Commas are dropped before comparing, so
// 24,972 in README matches 24972 in a file.

const (
	readmePath   = "../README.md"
	resultsDir   = "../bench/results"
	benchHeading = "## Benchmarks against client-go"
	e2eHeading   = "### Memory on a real kube-apiserver"
)

var (
	resultFileRE = regexp.MustCompile(`bench/results/((compare|e2e|guard|recovery|control-plane)-\d{8}T\d{6}Z\.txt)`)
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
		t.Fatalf("reading the result file README names: %v", err)
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

// readmeBlock is a paragraph, list item or table of README, with the line
// it starts at and the section it sits in.
type readmeBlock struct {
	line    int
	lines   []string
	table   bool
	section string // "compare", "e2e" or "" outside the benchmark sections
}

// readmeBlocks splits README into blocks: a blank line, a heading, a list
// item and the start or end of a table each start a new one.
func readmeBlocks(text string) []readmeBlock {
	var blocks []readmeBlock
	var cur *readmeBlock
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
			section = map[bool]string{true: "compare", false: ""}[line == benchHeading]
		case strings.HasPrefix(line, "### ") && section != "":
			if strings.HasPrefix(line, e2eHeading) {
				section = "e2e"
			}
		}
		isTable := strings.HasPrefix(line, "|")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			cur = nil
			continue
		}
		if cur == nil || cur.table != isTable || (!isTable && strings.HasPrefix(line, "- ")) {
			blocks = append(blocks, readmeBlock{line: i + 1, table: isTable, section: section})
			cur = &blocks[len(blocks)-1]
		}
		cur.lines = append(cur.lines, line)
	}
	return blocks
}

// TestReadmeFigures_InResultFiles checks README's benchmark figures against
// the result files, as the comment at the top of this file says.
func TestReadmeFigures_InResultFiles(t *testing.T) {
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(string(b))
	checked := 0
	for i, blk := range blocks {
		text := strings.Join(blk.lines, "\n")
		var files []string
		for _, m := range resultFileRE.FindAllStringSubmatch(text, -1) {
			files = append(files, m[1])
		}
		if blk.table && len(files) == 0 {
			if blk.section == "" {
				continue
			}
			if i > 0 && !blocks[i-1].table {
				for _, m := range resultFileRE.FindAllStringSubmatch(strings.Join(blocks[i-1].lines, "\n"), -1) {
					files = append(files, m[1])
				}
			}
			if len(files) == 0 {
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
		for _, fig := range figures(text) {
			checked++
			found := false
			for _, s := range sets {
				found = found || s[fig]
			}
			if !found {
				t.Errorf("README.md:%d: %s is in none of %v", blk.line, fig, files)
			}
		}
	}
	if checked == 0 {
		t.Error("no README figure was checked: the blocks that name result files were not found")
	}
}

// TestReadmeFigures_Figures pins what counts as a figure.
func TestReadmeFigures_Figures(t *testing.T) {
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

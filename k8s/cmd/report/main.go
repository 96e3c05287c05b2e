// Command report turns the test2json streams that run.sh records into the
// k8s-suites result table: per package, the top-level tests that passed,
// failed and were skipped on stock client-go and on the kcache overlay,
// whether the two pass sets are the same, the failures with their first
// lines of output, and the re-runs of tests that failed on either side.
//
// Layout it reads under -logs:
//
//	<variant>/<name>.<run>.json   test2json events of one run of a package's
//	                              test binary (run 1 is the whole package,
//	                              later runs re-run the failed tests)
//	times.tsv                     lines "name variant build_s run_s exit"
//
// where variant is stock or kcache and name is the package path under
// k8s.io/kubernetes/test/integration with "/" written as "-".
//
// It writes the -header file, then the table, to -out (stdout by default).
// The last line is the summary tools read:
//
//	k8s-suites: packages=N identical=M stock=P/F kcache=P/F kcache-only-failures=K
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// variants are the two builds of every package, in table order.
var variants = []string{"stock", "kcache"}

// event is the part of a test2json record the report uses.
type event struct {
	Action string
	Test   string
	Output string
}

// outcome is one top-level test's result in one run.
type outcome struct {
	action string   // "pass", "fail" or "skip"
	lines  []string // the test's (and its subtests') failure lines
}

// runResult is one run of one test binary.
type runResult struct {
	tests map[string]outcome
	// incomplete names tests that started but never reported a result
	// (the binary panicked or timed out while they ran).
	incomplete []string
}

// failureLine matches the t.Error/t.Fatal lines of a test's output
// (four spaces, a test file name, a line number, then the message): the
// lines worth quoting.
var failureLine = regexp.MustCompile(`^\s+\S+\.go:\d+: `)

// maxLines bounds the failure lines quoted per test.
const maxLines = 6

// parseRun reads one test2json stream.
func parseRun(r io.Reader) (runResult, error) {
	res := runResult{tests: map[string]outcome{}}
	started := map[string]bool{}
	lines := map[string][]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			// test2json passes lines it cannot frame through as
			// plain text; they carry no result.
			continue
		}
		if ev.Test == "" {
			continue
		}
		top, _, _ := strings.Cut(ev.Test, "/")
		switch ev.Action {
		case "run":
			if top == ev.Test {
				started[top] = true
			}
		case "output":
			if failureLine.MatchString(ev.Output) && len(lines[top]) < maxLines {
				lines[top] = append(lines[top], strings.TrimSpace(ev.Output))
			}
		case "pass", "fail", "skip":
			if top == ev.Test {
				res.tests[top] = outcome{action: ev.Action, lines: lines[top]}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return res, err
	}
	for name := range started {
		if _, ok := res.tests[name]; !ok {
			res.incomplete = append(res.incomplete, name)
		}
	}
	sort.Strings(res.incomplete)
	return res, nil
}

// timing is one line of times.tsv.
type timing struct {
	build, run string
	exit       string
}

// pkgResult is everything known about one package.
type pkgResult struct {
	name  string
	runs  map[string][]runResult // by variant, in run order
	times map[string]timing      // by variant
}

// first is the package's run 1 on a variant (the whole package), if any.
func (p *pkgResult) first(variant string) (runResult, bool) {
	rs := p.runs[variant]
	if len(rs) == 0 {
		return runResult{}, false
	}
	return rs[0], true
}

// counts are passed, failed and skipped top-level tests of run 1; an
// incomplete test counts as failed.
func counts(r runResult) (pass, fail, skip int) {
	for _, o := range r.tests {
		switch o.action {
		case "pass":
			pass++
		case "fail":
			fail++
		case "skip":
			skip++
		}
	}
	return pass, fail + len(r.incomplete), skip
}

// passSet is the sorted names of run 1's passed tests.
func passSet(r runResult) []string {
	var s []string
	for name, o := range r.tests {
		if o.action == "pass" {
			s = append(s, name)
		}
	}
	sort.Strings(s)
	return s
}

// tally counts one test's results over all runs of a variant.
func tally(runs []runResult, test string) (pass, total int) {
	for _, r := range runs {
		if o, ok := r.tests[test]; ok {
			total++
			if o.action == "pass" {
				pass++
			}
		} else if contains(r.incomplete, test) {
			total++
		}
	}
	return pass, total
}

func contains(s []string, x string) bool {
	i := sort.SearchStrings(s, x)
	return i < len(s) && s[i] == x
}

// failedAnywhere is every test that failed or did not finish in any run
// of either variant, sorted.
func failedAnywhere(p *pkgResult) []string {
	set := map[string]bool{}
	for _, v := range variants {
		for _, r := range p.runs[v] {
			for name, o := range r.tests {
				if o.action == "fail" {
					set[name] = true
				}
			}
			for _, name := range r.incomplete {
				set[name] = true
			}
		}
	}
	var s []string
	for name := range set {
		s = append(s, name)
	}
	sort.Strings(s)
	return s
}

// load reads every run and the timings of the named packages.
func load(dir string, names []string) ([]*pkgResult, error) {
	pkgs := make([]*pkgResult, 0, len(names))
	byName := map[string]*pkgResult{}
	for _, n := range names {
		p := &pkgResult{name: n, runs: map[string][]runResult{}, times: map[string]timing{}}
		pkgs = append(pkgs, p)
		byName[n] = p
		for _, v := range variants {
			for run := 1; ; run++ {
				f, err := os.Open(filepath.Join(dir, v, fmt.Sprintf("%s.%d.json", n, run)))
				if errors.Is(err, fs.ErrNotExist) {
					break
				}
				if err != nil {
					return nil, err
				}
				r, err := parseRun(f)
				f.Close()
				if err != nil {
					return nil, fmt.Errorf("read %s run %d of %s: %w", v, run, n, err)
				}
				p.runs[v] = append(p.runs[v], r)
			}
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "times.tsv"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) != 5 {
			continue
		}
		if p := byName[f[0]]; p != nil {
			p.times[f[1]] = timing{build: f[2], run: f[3], exit: f[4]}
		}
	}
	return pkgs, nil
}

// summary is the figures of the last line.
type summary struct {
	packages, identical         int
	stockPass, stockFail        int
	kcachePass, kcacheFail      int
	kcacheOnly                  int
	kcacheOnlyTests, flakyTests []string
	missing                     []string
	// unexplained names tests whose run-1 result differs between the
	// variants and that did not prove flaky in the re-runs.
	unexplained []string
}

// write prints the table, the failures and the summary line.
func write(w io.Writer, pkgs []*pkgResult) summary {
	var s summary
	fmt.Fprintln(w, "| package | tests | stock pass/fail/skip | kcache pass/fail/skip | same pass set | stock build, run (s) | kcache build, run (s) |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | :---: | ---: | ---: |")
	for _, p := range pkgs {
		st, okS := p.first("stock")
		kc, okK := p.first("kcache")
		if !okS || !okK {
			s.missing = append(s.missing, p.display())
			fmt.Fprintf(w, "| %s | - | %s | %s | not run | %s | %s |\n", p.display(),
				cell(st, okS), cell(kc, okK), p.timeCell("stock"), p.timeCell("kcache"))
			continue
		}
		s.packages++
		same := strings.Join(passSet(st), " ") == strings.Join(passSet(kc), " ")
		if same {
			s.identical++
		}
		sp, sf, _ := counts(st)
		kp, kf, _ := counts(kc)
		s.stockPass += sp
		s.stockFail += sf
		s.kcachePass += kp
		s.kcacheFail += kf
		names := map[string]bool{}
		for n := range st.tests {
			names[n] = true
		}
		for n := range kc.tests {
			names[n] = true
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s |\n", p.display(), len(names),
			cell(st, true), cell(kc, true), yesNo(same), p.timeCell("stock"), p.timeCell("kcache"))
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "Failures (run 1 is the whole package; later runs re-run only the tests that")
	fmt.Fprintln(w, "failed on either side, the same number of times on both):")
	listed := false
	kinds := map[string]string{}
	for _, p := range pkgs {
		for _, test := range failedAnywhere(p) {
			listed = true
			spass, stotal := tally(p.runs["stock"], test)
			kpass, ktotal := tally(p.runs["kcache"], test)
			kind := "fails on both"
			switch {
			case stotal > 0 && ktotal > 0 && spass == stotal && kpass == 0:
				kind = "KCACHE-ONLY"
				s.kcacheOnly++
				s.kcacheOnlyTests = append(s.kcacheOnlyTests, p.name+"."+test)
			case spass == 0 && kpass == ktotal && ktotal > 0:
				kind = "stock-only"
			case (spass > 0 && spass < stotal) || (kpass > 0 && kpass < ktotal):
				kind = "flaky"
				s.flakyTests = append(s.flakyTests, p.name+"."+test)
			}
			kinds[p.name+"."+test] = kind
			fmt.Fprintf(w, "- %s %s: %s; passed stock %d/%d runs, kcache %d/%d runs\n",
				p.display(), test, kind, spass, stotal, kpass, ktotal)
			for _, v := range variants {
				if lines := firstFailure(p.runs[v], test); len(lines) > 0 {
					fmt.Fprintf(w, "    %s: %s\n", v, strings.Join(lines, "\n    "+strings.Repeat(" ", len(v)+2)))
				}
			}
		}
	}
	if !listed {
		fmt.Fprintln(w, "- none")
	}
	for _, p := range pkgs {
		st, okS := p.first("stock")
		kc, okK := p.first("kcache")
		if !okS || !okK {
			continue
		}
		for _, test := range symmetricDiff(passSet(st), passSet(kc)) {
			if kinds[p.name+"."+test] != "flaky" {
				s.unexplained = append(s.unexplained, p.display()+"."+test)
			}
		}
	}
	if len(s.missing) > 0 {
		fmt.Fprintf(w, "\nNot run (yet): %s\n", strings.Join(s.missing, " "))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "k8s-suites: packages=%d identical=%d stock=%d/%d kcache=%d/%d kcache-only-failures=%d\n",
		s.packages, s.identical, s.stockPass, s.stockFail, s.kcachePass, s.kcacheFail, s.kcacheOnly)
	return s
}

// symmetricDiff is the names in exactly one of two sorted lists.
func symmetricDiff(a, b []string) []string {
	var d []string
	for _, x := range a {
		if !contains(b, x) {
			d = append(d, x)
		}
	}
	for _, x := range b {
		if !contains(a, x) {
			d = append(d, x)
		}
	}
	sort.Strings(d)
	return d
}

// firstFailure is the quoted lines of the test's first failed run.
func firstFailure(runs []runResult, test string) []string {
	for _, r := range runs {
		if o, ok := r.tests[test]; ok && o.action == "fail" {
			if len(o.lines) == 0 {
				return []string{"(no file:line output; see the log)"}
			}
			return o.lines
		}
		if contains(r.incomplete, test) {
			return []string{"(did not finish: the binary panicked or timed out; see the log)"}
		}
	}
	return nil
}

func (p *pkgResult) display() string { return strings.ReplaceAll(p.name, "-", "/") }

func (p *pkgResult) timeCell(variant string) string {
	t, ok := p.times[variant]
	if !ok {
		return "-"
	}
	c := t.build + ", " + t.run
	if t.exit != "0" {
		c += " (exit " + t.exit + ")"
	}
	return c
}

func cell(r runResult, ok bool) string {
	if !ok {
		return "-"
	}
	pass, fail, skip := counts(r)
	return strconv.Itoa(pass) + "/" + strconv.Itoa(fail) + "/" + strconv.Itoa(skip)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "**no**"
}

func main() {
	logs := flag.String("logs", "", "directory of the runs (see the package doc)")
	pkgList := flag.String("packages", "", "space-separated package names, in table order")
	header := flag.String("header", "", "file whose text comes first")
	out := flag.String("out", "", "result file (default stdout)")
	failed := flag.Bool("failed", false, "print, one a line, the tests that failed or did not finish in any run of either variant of the packages, and nothing else")
	strict := flag.Bool("strict", false, "exit 1 unless every package ran on both and every difference between the pass sets is a test that proved flaky")
	flag.Parse()
	if *logs == "" || *pkgList == "" {
		fmt.Fprintln(os.Stderr, "usage: report -logs DIR -packages 'a b ...' [-header FILE] [-out FILE] [-strict]")
		os.Exit(2)
	}
	pkgs, err := load(*logs, strings.Fields(*pkgList))
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	if *failed {
		for _, p := range pkgs {
			for _, test := range failedAnywhere(p) {
				fmt.Println(test)
			}
		}
		return
	}
	var b strings.Builder
	if *header != "" {
		h, err := os.ReadFile(*header)
		if err != nil {
			fmt.Fprintln(os.Stderr, "report:", err)
			os.Exit(1)
		}
		b.Write(h)
	}
	s := write(&b, pkgs)
	if *out == "" {
		fmt.Print(b.String())
	} else if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	if *strict && (len(s.missing) > 0 || len(s.unexplained) > 0) {
		fmt.Fprintf(os.Stderr, "report: not run on both: %v; stock and kcache differ on: %v\n",
			s.missing, s.unexplained)
		os.Exit(1)
	}
}

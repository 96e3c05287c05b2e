// Module ecosystem runs other projects' test suites against kcache and
// compares the outcomes. It holds no library code: run.sh prepares and runs
// the suites (see README.md), and cmd/specreport turns their reports into one
// table and an exit status.
package ecosystem

//go:build !linux

package launcher

import "syscall"

// childProcAttr puts the API server child in its own process group. Outside
// Linux there is no parent-death signal: a launcher killed with SIGKILL leaves
// its child running.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

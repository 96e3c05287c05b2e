package launcher

import "syscall"

// childProcAttr puts the API server child in its own process group, so that
// a Ctrl-C in a terminal reaches only the launcher (which then stops the child
// in order), and has the kernel kill the child should the launcher die without
// cleaning up.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

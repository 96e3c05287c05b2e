// Package handoff fixes the conventions between the launcher and the API
// server child process it starts: how the child is selected and where it
// finds its listening socket. It has no dependencies, so that tests can fake
// the child without linking the API server.
package handoff

// ChildCommand is the first argument that switches the launcher binary into
// API server mode. It is not meant to be typed by people.
const ChildCommand = "__kas-apiserver"

// ListenerFD is the descriptor number under which the child inherits the
// listening TCP socket: the first entry of exec.Cmd.ExtraFiles.
const ListenerFD = 3

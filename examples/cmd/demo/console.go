package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
)

// console writes the demo's output. Lines from several goroutines never
// interleave. On a terminal the progress bar is redrawn in place; anywhere
// else (a pipe, a file, a test) each progress update is a line of its own.
type console struct {
	// mu guards w and barShown.
	mu sync.Mutex
	w  io.Writer
	// tty says w is a terminal.
	tty bool
	// barShown says a progress bar is drawn on the current terminal line.
	barShown bool
}

func newConsole(w io.Writer) *console {
	return &console{w: w, tty: isTerminal(w)}
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// Linef writes one line, tagged with a fixed-width tag such as "ADDED" or
// "STATUS".
func (c *console) Linef(tag, format string, args ...any) {
	line := fmt.Sprintf("%-8s  %s\n", tag, fmt.Sprintf(format, args...))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endBarLocked()
	io.WriteString(c.w, line)
}

// Bar draws the progress bar line. On a terminal it replaces the bar
// drawn before; the next Linef or a final Bar moves past it.
func (c *console) Bar(line string, final bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.tty {
		fmt.Fprintf(c.w, "%-8s  %s\n", "SYNC", line)
		return
	}
	fmt.Fprintf(c.w, "\r\033[K%-8s  %s", "SYNC", line)
	c.barShown = true
	if final {
		c.endBarLocked()
	}
}

// endBarLocked ends the terminal line holding the progress bar, if any.
// The caller holds c.mu.
func (c *console) endBarLocked() {
	if c.barShown {
		io.WriteString(c.w, "\n")
		c.barShown = false
	}
}

// progressBar renders done out of total as a bar of width cells.
func progressBar(done, total, width int) string {
	if total <= 0 {
		return "[" + strings.Repeat("?", width) + "]"
	}
	filled := min(width, done*width/total)
	return "[" + strings.Repeat("#", filled) + strings.Repeat("-", width-filled) + "]"
}

// thousands formats n with comma separators: 12345 → "12,345".
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

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
// interleave. On a terminal the progress bar is redrawn in place and stays
// on the last line while other lines scroll above it; anywhere else (a
// pipe, a file, a test) each progress update is a line of its own.
type console struct {
	// mu guards w and bar.
	mu sync.Mutex
	w  io.Writer
	// tty says w is a terminal.
	tty bool
	// bar is the progress bar drawn on the terminal's last line, without
	// a newline; "" when there is none.
	bar string
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

// clearLine returns to the start of the terminal line and erases it.
const clearLine = "\r\033[K"

// Linef writes one line, tagged with a fixed-width tag such as "ADDED" or
// "STATUS". A progress bar on the terminal is redrawn below it.
func (c *console) Linef(tag, format string, args ...any) {
	line := fmt.Sprintf("%-8s  %s\n", tag, fmt.Sprintf(format, args...))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bar == "" {
		io.WriteString(c.w, line)
		return
	}
	io.WriteString(c.w, clearLine+line+c.bar)
}

// Bar draws the progress bar line. On a terminal it replaces the bar
// drawn before, and final leaves it in place for good.
func (c *console) Bar(line string, final bool) {
	line = fmt.Sprintf("%-8s  %s", "SYNC", line)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.tty {
		io.WriteString(c.w, line+"\n")
		return
	}
	if final {
		io.WriteString(c.w, clearLine+line+"\n")
		c.bar = ""
		return
	}
	io.WriteString(c.w, clearLine+line)
	c.bar = line
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

package main

import (
	"testing"
)

func TestFormats(t *testing.T) {
	tests := []struct{ got, want string }{
		{fmtNs(12), "12 ns"},
		{fmtNs(1500), "1.50 µs"},
		{fmtNs(2.5e6), "2.50 ms"},
		{fmtNs(3e9), "3.00 s"},
		{fmtBytes(100), "100 B"},
		{fmtBytes(2048), "2.0 KiB"},
		{fmtBytes(3 << 20), "3.0 MiB"},
		{fmtCount(3), "3.00"},
		{fmtCount(41.5), "41.5"},
		{fmtCount(12345), "12.3k"},
		{fmtCount(1.25e6), "1.25M"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

package harness

import "testing"

func TestParseVmHWM(t *testing.T) {
	tests := []struct {
		name, status string
		want         uint64
	}{
		{"present", "Name:\tx\nVmPeak:\t  100 kB\nVmHWM:\t    2048 kB\nVmRSS:\t 1 kB\n", 2048 << 10},
		{"absent", "Name:\tx\nVmRSS:\t 1 kB\n", 0},
		{"garbled", "VmHWM:\tlots kB\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseVmHWM([]byte(tt.status)); got != tt.want {
				t.Errorf("parseVmHWM = %d, want %d", got, tt.want)
			}
		})
	}
}

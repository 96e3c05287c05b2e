package membership

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestNew_RefusesBadConfigWithClearErrors(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{"nil client", func(c *Config) { c.Client = nil }, "client must not be nil"},
		{"empty namespace", func(c *Config) { c.Namespace = "" }, "namespace is empty"},
		{"malformed namespace", func(c *Config) { c.Namespace = "Team_A" }, `namespace "Team_A": `},
		{"empty group", func(c *Config) { c.Group = "" }, "group is empty"},
		{"group not a label value", func(c *Config) { c.Group = "my group" }, `group "my group" is the value of label membership.kcache.io/group: `},
		{"empty identity", func(c *Config) { c.Identity = "" }, "identity is empty"},
		{"identity not a name", func(c *Config) { c.Identity = "Pod_A" }, `lease name "ctl-Pod_A" (group-identity): `},
		{"lease name too long", func(c *Config) { c.Identity = strings.Repeat("a", 250) }, "must be no more than 253 characters"},
		{"negative lease duration", func(c *Config) { c.LeaseDuration = -time.Second }, "leaseDuration -1s must be greater than zero"},
		{"negative renew deadline", func(c *Config) { c.RenewDeadline = -time.Second }, "renewDeadline -1s must be greater than zero"},
		{"negative retry period", func(c *Config) { c.RetryPeriod = -time.Second }, "retryPeriod -1s must be greater than zero"},
		{"renew deadline equal to lease duration", func(c *Config) { c.LeaseDuration, c.RenewDeadline = 10*time.Second, 10*time.Second }, "leaseDuration 10s must be greater than renewDeadline 10s"},
		{"renew deadline beyond lease duration", func(c *Config) { c.RenewDeadline = 20 * time.Second }, "leaseDuration 15s must be greater than renewDeadline 20s"},
		{"retry period equal to renew deadline", func(c *Config) { c.RetryPeriod = 10 * time.Second }, "renewDeadline 10s must be greater than retryPeriod 10s"},
		{"lease duration not whole seconds", func(c *Config) { c.LeaseDuration = 15500 * time.Millisecond }, "leaseDuration 15.5s must be a whole number of seconds"},
		{"lease duration beyond int32 seconds", func(c *Config) { c.LeaseDuration = (1 << 31) * time.Second }, "does not fit the Lease's int32 seconds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(fake.NewClientset(), clocktesting.NewFakeClock(t0), "a", &recorder{})
			tc.modify(&cfg)
			m, err := New(cfg)
			if err == nil {
				t.Fatalf("New accepted the config: %+v", m.cfg)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("error %q does not wrap ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestNew_FillsInDefaults(t *testing.T) {
	cfg := testConfig(fake.NewClientset(), nil, "a", &recorder{})
	cfg.Clock = nil
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if m.cfg.LeaseDuration != DefaultLeaseDuration || m.cfg.RenewDeadline != DefaultRenewDeadline || m.cfg.RetryPeriod != DefaultRetryPeriod {
		t.Errorf("durations %v/%v/%v, want the defaults", m.cfg.LeaseDuration, m.cfg.RenewDeadline, m.cfg.RetryPeriod)
	}
	if m.cfg.Clock == nil {
		t.Error("no clock")
	}
	if got := m.LeaseName(); got != "ctl-a" {
		t.Errorf("LeaseName() = %q, want ctl-a", got)
	}
	if got := m.Assignment(); got.Claiming() || got.Index != -1 {
		t.Errorf("a new member claims %+v", got)
	}
}

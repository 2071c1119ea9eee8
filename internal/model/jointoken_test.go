package model

import (
	"testing"
	"time"
)

func TestCronSchedule(t *testing.T) {
	for _, c := range []struct {
		period string
		want   string // "" for an error
	}{
		{"1m", "* * * * *"}, {"10m", "*/10 * * * *"}, {"30m", "*/30 * * * *"},
		{"60m", "0 */1 * * *"}, {"6h", "0 */6 * * *"}, {"12h", "0 */12 * * *"}, {"24h", "0 0 * * *"},
		{"7m", ""}, {"45m", ""}, {"90m", ""}, {"5h", ""}, {"48h", ""}, {"30s", ""}, {"0s", ""},
	} {
		d, err := time.ParseDuration(c.period)
		if err != nil {
			t.Fatal(err)
		}
		got, err := CronSchedule(d)
		if c.want == "" && err == nil {
			t.Errorf("CronSchedule(%s) = %q, want an error", c.period, got)
		}
		if c.want != "" && (err != nil || got != c.want) {
			t.Errorf("CronSchedule(%s) = %q, %v; want %q", c.period, got, err, c.want)
		}
	}
}

func TestRenewalTakesLongestEffectiveProvisionTime(t *testing.T) {
	s := &Source{NodeGroups: map[string]*NodeGroup{
		"a":      {Name: "a", Kind: KindGCE},
		"b":      {Name: "b", Kind: KindGCEStatic, Autoscaling: AutoscalingOptions{MaxNodeProvisionTime: DurationOf(40 * time.Minute)}},
		"onprem": {Name: "onprem", Kind: KindOnPrem, Autoscaling: AutoscalingOptions{MaxNodeProvisionTime: DurationOf(9 * time.Hour)}},
	}}
	s.Cluster.JoinToken = JoinToken{TTL: DurationOf(2 * time.Hour), RenewEvery: DurationOf(1 * time.Hour)}
	s.Cluster.Autoscaler.MaxNodeProvisionTime = DurationOf(15 * time.Minute)
	r := s.Renewal()
	if r.Provision != 40*time.Minute || r.ProvisionGroup != "b" || r.Grace() != 70*time.Minute || r.MinTTL() != 130*time.Minute {
		t.Errorf("Renewal() = %+v, grace %v, min ttl %v", r, r.Grace(), r.MinTTL())
	}
	s.NodeGroups["b"].Autoscaling.MaxNodeProvisionTime = Duration{}
	s.Cluster.Autoscaler.MaxNodeProvisionTime = DurationOf(50 * time.Minute)
	if r := s.Renewal(); r.Provision != 50*time.Minute {
		t.Errorf("with the cluster default 50m: %+v", r)
	}
}

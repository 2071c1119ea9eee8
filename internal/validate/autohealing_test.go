package validate_test

import (
	"strings"
	"testing"
)

// TestAutohealingRebootTime: a reboot time no health check can wait out
// (over 9 intervals of 300 s) is refused at its position; autohealing is
// a gce-static group's field only.
func TestAutohealingRebootTime(t *testing.T) {
	for _, c := range []struct {
		name, file, old, new string
		want                 []string
	}{
		{"within", "autoscaler.cue", "\tmin:         1\n", "\tmin:         1\n\tautohealing: rebootTime: \"45m\"\n", nil},
		{"too long", "autoscaler.cue", "\tmin:         1\n", "\tmin:         1\n\tautohealing: rebootTime: \"46m\"\n", []string{
			`nodegroups/autoscaler.cue:10:27: nodeGroups.autoscaler.autohealing.rebootTime: rebootTime 46m is over 45m, the longest a health check waits out (9 intervals of 300 s, the Compute API's longest, before the 10th failure): the MIG would recreate a VM still rebooting`,
		}},
		{"zero", "autoscaler.cue", "\tmin:         1\n", "\tmin:         1\n\tautohealing: rebootTime: \"0s\"\n", []string{
			`nodegroups/autoscaler.cue:10:27: nodeGroups.autoscaler.autohealing.rebootTime: rebootTime 0s is not a length of time: a reboot takes some`,
		}},
		{"autoscaled group", "cpu-burst.cue", "\tmin:", "\tautohealing: repair: false\n\tmin:", []string{
			`nodegroups/cpu-burst.cue:`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := findings(t, example(t, map[string]func(string) string{c.file: replace(c.old, c.new)}))
			if len(c.want) == 1 && strings.HasSuffix(c.want[0], ":") {
				if len(got) != 1 || !strings.HasPrefix(got[0], c.want[0]) || !strings.Contains(got[0], "autohealing") || !strings.Contains(got[0], "not allowed") {
					t.Errorf("findings:\n%s\nwant one at %s refusing autohealing", strings.Join(got, "\n"), c.want[0])
				}
				return
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

package k8s

import (
	"strings"
	"testing"
)

// A script that is not embedded is an error of the workload that ships
// it, not a panic.
func TestWorkloadMissingScript(t *testing.T) {
	w := scriptWorkload{Workload: "nodegen-example", Script: "no-such-script.sh"}
	objs, err := w.objects()
	if err == nil || !strings.Contains(err.Error(), "nodegen-example: the script no-such-script.sh") {
		t.Fatalf("objects %d, error %v; want an error naming the workload and the script", len(objs), err)
	}
}

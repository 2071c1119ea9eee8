package gce_test

import (
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/testing/scripttest"
)

// faultSlack is how much longer than its deadline a failing run may take:
// the deadline counts whole seconds, a last request or kubeadm attempt is
// cut at the deadline, and the machine may be loaded.
const faultSlack = 15 * time.Second

// recovered bounds a run that recovers from its faults: its retries wait
// seconds, so it only tells a hang or a retry schedule gone wrong from a
// recovery (on a loaded machine a recovery measured 22 s), never how fast
// the script is.
const recovered = 60 * time.Second

// TestStartupScriptFaults runs the join script of the test source's batch
// group (token in Secret Manager) for real under bash against the fake
// metadata server and Secret Manager with faults injected, and checks the
// outcome: joined, or exactly one ERROR line naming what failed, exit 1,
// within the deadline.
func TestStartupScriptFaults(t *testing.T) {
	src := loadJoinSource(t, map[string]string{"cluster.cue": strings.Replace(joinSource["cluster.cue"],
		`joinToken: metadataKey: "lab-join-token"`, `joinToken: secretManager: secret: "lab-join"`, 1)})
	files, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	g := src.NodeGroups["batch"]
	script := files[layout.StartupScriptPath(g.Name)]
	vm := scripttest.VM{
		Project:       src.Cluster.GCP.Project,
		NumericID:     "998877665544",
		Zone:          g.Zones[0],
		Instance:      src.Cluster.BaseInstanceName(g) + "-m2pq",
		JoinToken:     joinToken,
		Secret:        "lab-join",
		SecretVersion: "latest",
	}
	const secretPath = ":access"
	// The deadlines leave the steps before the one that fails time to
	// finish on a loaded machine (at 6 s, the metadata reads of the
	// "kubeadm hangs" case once ran past it).
	cases := []struct {
		name     string
		opt      scripttest.Options
		deadline int    // JOIN_DEADLINE; 0 keeps the rendered one
		errWant  string // the ERROR line's start; "" means the VM joins
		within   time.Duration
	}{
		{name: "one dropped metadata connection", opt: scripttest.Options{Faults: []scripttest.Fault{
			{Path: "instance/name", Count: 1, Action: scripttest.Drop}}}, within: recovered},
		{name: "eleven metadata 503s in a row", opt: scripttest.Options{Faults: []scripttest.Fault{
			{Path: "/computeMetadata/", Count: 11, Status: http.StatusServiceUnavailable}}}, within: recovered},
		{name: "metadata 429 then a dropped token request", opt: scripttest.Options{Faults: []scripttest.Fault{
			{Path: "instance/zone", Count: 1, Status: http.StatusTooManyRequests},
			{Path: "service-accounts/default/token", Count: 1, Action: scripttest.Drop}}}, within: recovered},
		{name: "a metadata request hangs past curl's max time", opt: scripttest.Options{
			Faults:    []scripttest.Fault{{Path: "instance/zone", Count: 1, Action: scripttest.Hang, Hang: time.Minute}},
			Constants: map[string]string{"HTTP_TIMEOUT": "1"}}, within: recovered},
		{name: "Secret Manager 403 (IAM not propagated), then 200", opt: scripttest.Options{Faults: []scripttest.Fault{
			{Path: secretPath, Count: 3, Status: http.StatusForbidden}}}, within: recovered},
		{name: "Secret Manager 404 (no version yet: day 0), then 200", opt: scripttest.Options{Faults: []scripttest.Fault{
			{Path: secretPath, Count: 4, Status: http.StatusNotFound}}}, within: recovered},
		{name: "Secret Manager drops a connection and answers 500", opt: scripttest.Options{Faults: []scripttest.Fault{
			{Path: secretPath, Count: 1, Action: scripttest.Drop},
			{Path: secretPath, Count: 1, Status: http.StatusInternalServerError}}}, within: recovered},
		{name: "flapping VPN: kubeadm fails twice", opt: scripttest.Options{FailJoins: 2, Constants: map[string]string{"RETRY_DELAY": "1"}},
			within: recovered},

		{name: "metadata server down", deadline: 6, opt: scripttest.Options{Faults: []scripttest.Fault{
			{Path: "/computeMetadata/", Count: 1 << 20, Status: http.StatusServiceUnavailable}},
			Constants: map[string]string{"HTTP_RETRY_DELAY": "1"}},
			errWant: "ERROR: metadata: could not read this VM's name"},
		{name: "metadata answers 404", opt: scripttest.Options{Faults: []scripttest.Fault{
			{Path: "project/project-id", Count: 1, Status: http.StatusNotFound}}},
			errWant: "ERROR: metadata: could not read the project", within: recovered},
		{name: "Secret Manager 403 past the IAM propagation window", deadline: 30, opt: scripttest.Options{
			Faults:    []scripttest.Fault{{Path: secretPath, Count: 1 << 20, Status: http.StatusForbidden}},
			Constants: map[string]string{"IAM_PROPAGATION_WINDOW": "3", "HTTP_RETRY_DELAY": "1"}},
			errWant: "ERROR: secret access: could not read Secret Manager secret lab-join", within: recovered},
		{name: "Secret Manager 404 until the deadline (no first token)", deadline: 10, opt: scripttest.Options{
			Faults:    []scripttest.Fault{{Path: secretPath, Count: 1 << 20, Status: http.StatusNotFound}},
			Constants: map[string]string{"HTTP_RETRY_DELAY": "1"}},
			errWant: "ERROR: secret access: could not read Secret Manager secret lab-join (version latest); has the first join token been added?"},
		{name: "Secret Manager hangs every time", deadline: 12, opt: scripttest.Options{
			Faults: []scripttest.Fault{{Path: secretPath, Count: 1 << 20, Action: scripttest.Hang, Hang: time.Hour}}},
			errWant: "ERROR: secret access: could not read Secret Manager secret lab-join"},
		{name: "control plane unreachable: kubeadm fails", deadline: 14, opt: scripttest.Options{
			FailJoins: 1 << 20, Constants: map[string]string{"RETRY_DELAY": "1"}},
			errWant: "ERROR: join: kubeadm join failed"},
		{name: "control plane unreachable: kubeadm hangs", deadline: 12, opt: scripttest.Options{HangJoins: 1 << 20},
			errWant: "ERROR: join: kubeadm join was still running at the deadline (12s)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // the runs mostly wait
			opt := c.opt
			if c.deadline > 0 {
				opt.Constants = map[string]string{"JOIN_DEADLINE": strconv.Itoa(c.deadline)}
				maps.Copy(opt.Constants, c.opt.Constants)
			}
			res := scripttest.Run(t, script, vm, opt)
			errors := strings.Count(res.Stderr, "nodegen-join[batch]: ERROR")
			if c.errWant == "" {
				if res.ExitCode != 0 || errors != 0 || len(res.JoinConfigs) == 0 {
					t.Fatalf("want a join: exit %d, %d ERROR lines, %d joins\n%s", res.ExitCode, errors, len(res.JoinConfigs), res.Stderr)
				}
			} else {
				if res.ExitCode != 1 || errors != 1 || !strings.Contains(res.Stderr, "nodegen-join[batch]: "+c.errWant) {
					t.Fatalf("want exit 1 and one ERROR line starting %q: exit %d, %d ERROR lines\n%s", c.errWant, res.ExitCode, errors, res.Stderr)
				}
				if strings.Contains(res.Stderr, "ERROR: failed unexpectedly") {
					t.Errorf("the failure was not named:\n%s", res.Stderr)
				}
			}
			limit := c.within
			if c.deadline > 0 {
				limit = time.Duration(c.deadline)*time.Second + faultSlack
			}
			if res.Elapsed > limit {
				t.Errorf("the script ran %s, over %s\n%s", res.Elapsed.Round(time.Millisecond), limit, res.Stderr)
			}
			if strings.Contains(res.Stderr, joinToken) || strings.Contains(res.Stderr, "fake-access-token") {
				t.Errorf("the log shows a secret:\n%s", res.Stderr)
			}
			t.Logf("%s in %s", strings.TrimSpace(lastLine(res.Stderr)), res.Elapsed.Round(time.Millisecond))
		})
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndex(s, "\n")+1:]
}

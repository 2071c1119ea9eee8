package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nodegen/nodegen/internal/drift"
	"github.com/nodegen/nodegen/internal/kube"
	"github.com/nodegen/nodegen/internal/nodecheck"
	"github.com/nodegen/nodegen/internal/source"
)

const driftDoc = `drift compares the real world with the source.

Nodes come from --nodes FILE (the output of kubectl get nodes -o json; - for
stdin) or from a live cluster with --kubeconfig FILE. Given none of --nodes,
--kubeconfig and --instance-template, they come from the cluster of the
kubeconfig files $KUBECONFIG names, merged as kubectl merges them (a list
separated by ":"), or without $KUBECONFIG of ~/.kube/config, as kubectl
reads it, with their current context. Each node is matched to
its group by its providerID (an instance of the group's MIG, as the
autoscaler maps it) or by the nodegen.dev/node-group label. Reported: labels
and taints missing, extra or different from the source (the node's own
labels, set by the kubelet, and those of Node Feature Discovery and the GPU
Operator are not extra; zone, region, instance type, os and arch are
compared on cloud nodes); a startup taint still present on a node older than
--stuck-after; nvidia.com/gpu allocatable different from the group's GPU
count (not while the node is still initialising); nodes labelled with a
group that no longer exists; cloud nodes (gce:// providerID) of no group;
stale cloud nodes, whose nodegen.dev/revision label is not their group's
current revision (made from an older source: nodegen rollout replaces them).
A node's kubelet may set that label on itself: with --managed-instances FILE
(the output of gcloud compute instance-groups managed list-instances MIG
--zone ZONE --format=json; repeatable), a node whose instance is listed there
is stale by the revision the kube-env of the template Compute made it from
declares, given that template with --instance-template, whatever its label
says.

Instance templates come from --instance-template FILE (the output of gcloud
compute instance-templates describe --format=json, or list --format=json;
repeatable). Each is matched to its group by name prefix; its kube-env and
startup-script metadata are compared with what gen renders now, its
guestAccelerators with the group's GPU, its machine type and boot disk size
with the source.

Exit 0 when nothing drifted, 1 when drift was found, 2 on a usage mistake,
3 when drift could not compare (the cluster unreachable or refusing, an
input unreadable, an invalid source): monitoring can tell drift from a
failed check.`

// driftFlags are drift's flags.
type driftFlags struct {
	src        ioFlags
	nodesFile  string
	kubeconfig string
	// liveFromEnv: no input was given, so the nodes come from the
	// cluster of $KUBECONFIG.
	liveFromEnv bool
	templates   cli.StringSlice
	instances   cli.StringSlice
	output      string
	stuckAfter  time.Duration
	now         string
}

func driftCommand(s *streams) *cli.Command {
	f := &driftFlags{}
	return &cli.Command{
		Name:        "drift",
		Usage:       "compare cluster nodes and instance templates with the source",
		Description: driftDoc,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "nodes", Usage: "`FILE` holding kubectl get nodes -o json output (- for stdin)", Destination: &f.nodesFile},
			&cli.StringFlag{Name: "kubeconfig", Usage: "read the nodes live from the cluster of this kubeconfig `FILE` (without any input flag: $KUBECONFIG, as kubectl reads it)", Destination: &f.kubeconfig},
			&cli.StringSliceFlag{Name: "instance-template", Usage: "`FILE` holding gcloud instance-templates describe/list --format=json output (repeatable)", Destination: &f.templates},
			&cli.StringSliceFlag{Name: "managed-instances", Usage: "`FILE` holding gcloud compute instance-groups managed list-instances --format=json output: a listed node's revision is that of the template Compute made it from (repeatable)", Destination: &f.instances},
			sourceFlag(&f.src),
			clusterFlag(&f.src),
			outputFlag(&f.output),
			&cli.DurationFlag{Name: "stuck-after", Value: 30 * time.Minute, Usage: "a startup taint older than `DURATION` is stuck", Destination: &f.stuckAfter},
			&cli.StringFlag{Name: "now", Usage: "measure node ages as if it were this RFC 3339 `TIME` (reproducible reports)", Destination: &f.now},
		},
		OnUsageError: onUsageError,
		Action:       func(c *cli.Context) error { return driftExit(runDrift(c, s, f)) },
	}
}

// runDrift is drift's action: the inputs are read (and bad input
// reported) before the source is loaded.
func runDrift(c *cli.Context, s *streams, f *driftFlags) error {
	if err := noArgs(c); err != nil {
		return err
	}
	opts, err := f.options()
	if err != nil {
		return err
	}
	in, err := f.readInputs(s)
	if err != nil {
		return err
	}
	rc, err := oneCluster(s, &f.src, "drift")
	if err != nil {
		return err
	}
	model, rendered := rc.Member.Source, rc.Files
	opts.Revisions = rc.Revisions
	if len(in.instances) > 0 {
		opts.InstanceRevisions = drift.InstanceRevisions(in.instances, in.templates)
	}
	var (
		nodes     []nodecheck.NodeResult
		unmanaged []string
	)
	switch {
	case in.nodesClient != nil:
		if nodes, unmanaged, err = drift.CheckNodesOf(c.Context, model, in.nodesClient, opts); err != nil {
			return err
		}
	case in.nodesData != nil:
		list, err := drift.ReadNodes(f.nodesFile, in.nodesData)
		if err != nil {
			return err
		}
		nodes, unmanaged = nodecheck.Check(model, list, opts)
	}
	var tr []drift.TemplateResult
	if len(in.templates) > 0 {
		tr = drift.CheckTemplates(model, rendered, in.templates)
	}
	r := drift.NewReport(nodes, unmanaged, tr)
	if f.output == "json" {
		err = writeJSON(s.out, r)
	} else {
		err = drift.WriteText(s.out, r)
	}
	if err != nil {
		return err
	}
	if r.Drift {
		return errDrift
	}
	return nil
}

// errDrift: drift was found and reported.
var errDrift = fmt.Errorf("drift found: %w", errFindings)

// driftExit gives drift's errors their exit codes: drift found 1, a usage
// mistake 2, anything else (no comparison made) ExitError.
func driftExit(err error) error {
	var ue usageError
	switch {
	case err == nil || errors.Is(err, errDrift) || errors.As(err, &ue) || errors.As(err, new(*source.NameError)):
		return err
	}
	return codedError{ExitError, err}
}

// options checks the flags' combination and values and returns the
// options of the comparison (its revisions aside).
func (f *driftFlags) options() (nodecheck.Options, error) {
	if err := checkOutput(f.output); err != nil {
		return nodecheck.Options{}, err
	}
	if f.nodesFile != "" && f.kubeconfig != "" {
		return nodecheck.Options{}, usageError{fmt.Errorf("use --nodes or --kubeconfig, not both")}
	}
	if len(f.instances.Value()) > 0 && len(f.templates.Value()) == 0 {
		return nodecheck.Options{}, usageError{fmt.Errorf("--managed-instances needs the instance templates they name, with --instance-template FILE: their kube-env declares the revision")}
	}
	if f.nodesFile == "" && f.kubeconfig == "" && len(f.templates.Value()) == 0 {
		if !kubeconfigDefault() {
			return nodecheck.Options{}, usageError{fmt.Errorf("drift needs --nodes FILE, --kubeconfig FILE, --instance-template FILE, $%s or %s", kube.KubeconfigEnv, kube.HomeKubeconfigName)}
		}
		f.liveFromEnv = true
	}
	opts := nodecheck.Options{Now: time.Now(), StuckAfter: f.stuckAfter}
	if f.now != "" {
		t, err := time.Parse(time.RFC3339, f.now)
		if err != nil {
			return nodecheck.Options{}, usageError{fmt.Errorf("--now: %v", err)}
		}
		opts.Now = t
	}
	return opts, nil
}

// driftInputs are drift's inputs, read: the instance templates, and the
// nodes as a client of a live cluster or as a file's bytes.
type driftInputs struct {
	templates   []*drift.LiveTemplate
	instances   []drift.ManagedInstance
	nodesClient *kube.Client
	nodesData   []byte
}

// readInputs reads the instance templates and the nodes' file, or makes
// the client of the cluster of --kubeconfig.
func (f *driftFlags) readInputs(s *streams) (driftInputs, error) {
	var in driftInputs
	for _, name := range f.templates.Value() {
		data, err := readInput(s, name)
		if err != nil {
			return in, err
		}
		ts, err := drift.ReadTemplates(name, data)
		if err != nil {
			return in, err
		}
		in.templates = append(in.templates, ts...)
	}
	for _, name := range f.instances.Value() {
		data, err := readInput(s, name)
		if err != nil {
			return in, err
		}
		mis, err := drift.ReadManagedInstances(name, data)
		if err != nil {
			return in, err
		}
		in.instances = append(in.instances, mis...)
	}
	switch {
	case f.kubeconfig != "" || f.liveFromEnv:
		var err error
		if in.nodesClient, err = liveCluster(f.kubeconfig); err != nil {
			return in, err
		}
	case f.nodesFile != "":
		var err error
		if in.nodesData, err = readInput(s, f.nodesFile); err != nil {
			return in, err
		}
	}
	return in, nil
}

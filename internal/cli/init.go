package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/validate"
)

const initDoc = `init writes a minimal source for a new cluster --name into an empty (or new)
directory, --dir (default nodegroups): the cluster (its GCP project and region,
the control plane's endpoint, Kubernetes version and CA pin, the join token in
Secret Manager) and the Cluster Autoscaler's own node group (gce-static, one
small VM in each of two zones of the region, tainted for it alone). nodegen vet
accepts it and nodegen gen renders it; add the groups of the cluster next to it
(nodegen docs --schema lists every field).

It refuses a directory that holds anything. Every value is one only you know:
the CA pin is printed on a control-plane node by
  ` + validate.CACertHashCommand + `

A Kubernetes release newer than nodegen's table (docs/versions.md) needs
--accept-unknown-kubernetes-version, which init writes into the source.

Exit 0 when written, 1 when the result does not pass vet (then nothing is
written, not even the directory, and each finding names the flag of the
value it is about), 2 on a usage mistake.`

// initFlags are init's flags.
type initFlags struct {
	dir, name, project, region, endpoint, version, caHash string
	acceptUnknownVersion                                  bool
}

// initFlagOf names the flag that gave the value at a path of the written
// source, for init's findings: the files do not exist when they are
// refused, so a finding names the flag, not a file's line.
var initFlagOf = []struct{ path, flag string }{
	{"cluster.name", "--name"},
	{"cluster.gcp.project", "--project"},
	{"cluster.gcp.region", "--region"},
	{"cluster.controlPlaneEndpoint", "--control-plane-endpoint"},
	{"cluster.kubernetesVersion", "--kubernetes-version"},
	{"cluster.caCertHashes", "--ca-cert-hash"},
	{"cluster.joinToken", "--name"},
	{"nodeGroups.autoscaler", "--region"},
}

func initCommand(s *streams) *cli.Command {
	f := &initFlags{}
	return &cli.Command{
		Name:        "init",
		Usage:       "write a minimal source for a new cluster into an empty directory",
		Description: initDoc,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Value: "nodegroups", Usage: "the source `DIR` to create (empty or missing)", Destination: &f.dir},
			&cli.StringFlag{Name: "name", Usage: "the cluster's `NAME`: it prefixes the GCE names", Destination: &f.name},
			&cli.StringFlag{Name: "project", Usage: "the GCP `PROJECT` ID of the cloud nodes", Destination: &f.project},
			&cli.StringFlag{Name: "region", Usage: "the GCP `REGION` of the cloud nodes, e.g. europe-west4", Destination: &f.region},
			&cli.StringFlag{Name: "control-plane-endpoint", Usage: "the kube-apiserver's `HOST:PORT` as the cloud nodes reach it over the VPN", Destination: &f.endpoint},
			&cli.StringFlag{Name: "kubernetes-version", Usage: "the control plane's Kubernetes `VERSION`, e.g. 1.35.2", Destination: &f.version},
			&cli.StringFlag{Name: "ca-cert-hash", Usage: "the pin of the cluster's CA, `sha256:HEX` (as kubeadm join's --discovery-token-ca-cert-hash)", Destination: &f.caHash},
			&cli.BoolFlag{Name: "accept-unknown-kubernetes-version", Usage: "write cluster.acceptUnknownKubernetesVersion: true, for a release nodegen's table does not know yet (docs/versions.md)", Destination: &f.acceptUnknownVersion},
		},
		OnUsageError: onUsageError,
		Action:       func(c *cli.Context) error { return runInit(c, s, f) },
	}
}

// initValue is what init writes into a CUE string: no quote, backslash,
// control or non-ASCII character, so that the value needs no escaping.
var initValue = regexp.MustCompile(`^[\x21\x23-\x5b\x5d-\x7e]+$`)

func runInit(c *cli.Context, s *streams, f *initFlags) error {
	if err := noArgs(c); err != nil {
		return err
	}
	name := f.name
	values := []struct{ flag, v string }{
		{"--name", name}, {"--project", f.project}, {"--region", f.region},
		{"--control-plane-endpoint", f.endpoint}, {"--kubernetes-version", f.version}, {"--ca-cert-hash", f.caHash},
	}
	var missing []string
	for _, v := range values {
		switch {
		case v.v == "":
			missing = append(missing, v.flag)
		case !initValue.MatchString(v.v):
			return usageError{fmt.Errorf("init: %s %q: only printable ASCII without quotes, backslashes or spaces", v.flag, v.v)}
		}
	}
	if len(missing) > 0 {
		return usageError{fmt.Errorf("init needs %s (the CA pin: %s on a control-plane node)", strings.Join(missing, ", "), validate.CACertHashCommand)}
	}
	zones, ok := gce.RegionZones(f.region)
	if !ok || len(zones) < 2 {
		return usageError{fmt.Errorf("init: --region %q is no Compute Engine region nodegen knows with two zones or more", f.region)}
	}
	if entries, err := os.ReadDir(f.dir); err == nil && len(entries) > 0 {
		return usageError{fmt.Errorf("init: %s holds files already: init writes only into an empty or new directory", f.dir)}
	} else if err != nil && !os.IsNotExist(err) {
		return err
	}
	minor := strings.SplitN(f.version, ".", 3)
	family := "k8s-node"
	if len(minor) == 3 {
		family += "-" + minor[0] + "-" + minor[1]
	}
	files := map[string]string{
		"cluster.cue": fmt.Sprintf(`// Cluster %[1]s: an on-prem kubeadm control plane, with cloud node groups
// in project %[2]s, region %[3]s, reached over the VPN.
cluster: {
	name:                 %[1]q
	kubernetesVersion:    %[4]q
	controlPlaneEndpoint: %[5]q
	caCertHashes: [%[6]q]

	// The bootstrap token lives in Secret Manager; the VMs read it at boot
	// and nodegen's renewer replaces it.
	joinToken: secretManager: secret: %[7]q

	gcp: {
		project: %[2]q
		region:  %[3]q
	}

	autoscaler: nodeGroup: "autoscaler"
}
`, name, f.project, f.region, f.version, f.endpoint, f.caHash, name+"-join-token") + acceptLine(f.acceptUnknownVersion),
		"autoscaler.cue": fmt.Sprintf(`// The Cluster Autoscaler's own nodes: a small CPU VM in each of two zones,
// a replica on each, the metadata server in reach. Tainted for it alone.
// The image is one you build: kubeadm, the kubelet and a container runtime
// at the cluster's version (docs/join.md lists what the join script needs).
nodeGroups: autoscaler: {
	kind:        "gce-static"
	description: "Dedicated nodes for the Cluster Autoscaler"
	zones: [%[1]q, %[2]q]
	machineType: "e2-standard-2"
	image:       %[3]q
	min:         1
	max:         1
	taints: [{key: "nodegen.dev/autoscaler", value: "only", effect: "NoSchedule"}]
}
`, zones[0], zones[1], "projects/"+f.project+"/global/images/family/"+family),
	}
	// What init writes must pass vet; it is checked in a directory of its
	// own first, so that a refusal leaves nothing, not even f.dir.
	tmp, err := os.MkdirTemp("", "nodegen-init-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	check := filepath.Join(tmp, filepath.Base(filepath.Clean(f.dir)))
	if err := writeInitFiles(check, files); err != nil {
		return err
	}
	if _, err := pipeline.Load(check); err != nil {
		var list diag.List
		if errors.As(err, &list) {
			fmt.Fprintf(s.err, "nodegen: init: these values do not pass vet, so nothing was written:\n")
			for _, fd := range list {
				flag := initFlagFor(fd.Path)
				msg := fd.Msg
				if flag == "--kubernetes-version" && strings.Contains(msg, "acceptUnknownKubernetesVersion") {
					msg += " (init: --accept-unknown-kubernetes-version)"
				}
				fmt.Fprintf(s.err, "%s: %s\n", flag, msg)
			}
			return errFindings
		}
		return err
	}
	if err := writeInitFiles(f.dir, files); err != nil {
		return err
	}
	var written []string
	for _, n := range initFiles {
		written = append(written, filepath.Join(f.dir, n))
	}
	_, err = fmt.Fprintf(s.out, "wrote %s: run nodegen vet --source %s, add your node groups, then nodegen gen\n", strings.Join(written, " and "), f.dir)
	return err
}

// initFiles are the files init writes, in order.
var initFiles = []string{"cluster.cue", "autoscaler.cue"}

// writeInitFiles writes files into dir, creating it.
func writeInitFiles(dir string, files map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, n := range initFiles {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(files[n]), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// initFlagFor is the flag whose value a finding at path is about, or the
// path in the written source when no flag gave it.
func initFlagFor(path string) string {
	for _, m := range initFlagOf {
		if path == m.path || strings.HasPrefix(path, m.path+".") {
			return m.flag
		}
	}
	return path
}

// acceptLine is the line init adds to cluster.cue for
// --accept-unknown-kubernetes-version.
func acceptLine(accept bool) string {
	if !accept {
		return ""
	}
	return "\n// The Kubernetes version is newer than nodegen's table (--accept-unknown-kubernetes-version).\ncluster: acceptUnknownKubernetesVersion: true\n"
}

// Package cli implements the nodegen command line.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/secrets"
	"github.com/nodegen/nodegen/internal/source"
)

// Exit codes.
const (
	ExitOK       = 0
	ExitFindings = 1 // invalid input, stale output, failed check
	ExitUsage    = 2
	// ExitError: drift could not compare at all (the cluster unreachable,
	// an input unreadable, an invalid source), so that monitoring tells it
	// from drift found (ExitFindings).
	ExitError = 3
)

// codedError is an error that exits with its own code.
type codedError struct {
	code int
	error
}

func (e codedError) Unwrap() error { return e.error }

// errFindings says the findings were already printed.
var errFindings = errors.New("findings reported")

// usageError is a usage mistake: exit 2.
type usageError struct{ error }

// streams are a command's standard streams.
type streams struct {
	in       io.Reader
	out, err io.Writer
	// memory is the memory policy of the pipeline's runs.
	memory pipeline.MemoryPolicy
}

// Main runs nodegen with args (without the program name) and returns the
// exit code. It never calls os.Exit, and leaves the process's garbage
// collector and memory limit alone (pipeline.SharedProcess).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(&streams{in: stdin, out: stdout, err: stderr}, args)
}

// Command is Main for the program of a process of its own, the nodegen
// command: its runs have the process's memory (pipeline.OwnProcess).
func Command(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(&streams{in: stdin, out: stdout, err: stderr, memory: pipeline.OwnProcess}, args)
}

// run runs nodegen on the streams s.
func run(s *streams, args []string) int {
	stdin, stdout, stderr := s.in, s.out, s.err
	app := &cli.App{
		Name:        "nodegen",
		Usage:       "render hybrid-cluster node groups into kube-env, join scripts, manifests and autoscaler config",
		Description: description,
		Reader:      stdin,
		Writer:      stdout,
		ErrWriter:   stderr,
		// --version is nodegen's own flag, so that it prints what
		// `nodegen version` prints (urfave/cli's would print another line).
		HideVersion: true,
		Flags: []cli.Flag{&cli.BoolFlag{
			Name: "version", Aliases: []string{"v"}, Usage: "print the version (as nodegen version does)", DisableDefaultText: true,
		}},
		Action:          func(c *cli.Context) error { return appAction(s, c) },
		ExitErrHandler:  func(*cli.Context, error) {},
		OnUsageError:    onUsageError,
		CommandNotFound: func(c *cli.Context, name string) {},
		Commands:        commands(s),
	}
	err := app.Run(append([]string{"nodegen"}, args...))
	return exitCode(s, err, args, app.Commands)
}

// description is nodegen --help's description: what gen renders, file by
// file (TestHelpListsRendered holds it to what gen writes).
const description = `nodegen reads the CUE source of a hybrid cluster's node groups (nodegroups/) and
renders into out/ every artifact that must agree with it (in a fleet, one tree per
cluster under out/<cluster>/):

  gce/<group>/          kube-env and startup-script.sh (the kubeadm join) of each cloud group
  terraform/            the module: main.tf, variables.tf, outputs.tf, versions.tf, iam.tf,
                        join-secret.tf, network.tf, vpn.tf (a VPN), nodegroup-<group>.tf,
                        eastwest-gateway-lb.tf (a mesh)
  terraform/root/       main.tf: the root module that applies it (provider, module block)
  images/<family>/      build.sh, the node image of each image family the groups boot from
  k8s/                  autoscaler-node.yaml, node-csr-approver.yaml, join-token-renewer.yaml,
                        node-lifecycle.yaml, taint-remover.yaml, gpu-operator-values.yaml
  calico/               a pod network's operator-installation.yaml (tigera-operator) or
                        manifest-install.yaml (Calico's own manifest): one of the two
  cluster-autoscaler/   flags.txt, values.yaml, priority-expander.yaml
  monitoring/           rules.yaml (Prometheus alerting rules), prometheusrule.yaml,
                        servicemonitor.yaml (prometheus-operator), dashboard.yaml
                        (the Grafana dashboard, a ConfigMap for Grafana's sidecar)
  onprem/               set-provider-id.sh, label-onprem-nodes.sh (onprem groups' nodes)
  onprem/join/          <group>.sh, the kubeadm join of a new server of each onprem group
  onprem/vpn/<gateway>/ a VPN's on-prem gateway: install.sh, swanctl.conf, frr.conf, and
                        onprem/vpn/<gateway>/conf.d/ <tunnel>.conf,
                        onprem/vpn/<gateway>/strongswan.conf.d/ nodegen.conf,
                        onprem/vpn/<gateway>/systemd-network/ vpn-<tunnel>.netdev,
                        vpn-<tunnel>.network,
                        onprem/vpn/<gateway>/nftables/ nodegen-vpn-mss-clamp.nft,
                        onprem/vpn/<gateway>/systemd-system/ nodegen-vpn-mss-clamp.service
  docs/                 day0.md, nodegroups.md, mesh.md (a mesh), fleet.md (a fleet, in out/docs/)
  istio/                a mesh's base-values.yaml, istiod-values.yaml,
                        eastwest-gateway-values.yaml, namespace.yaml, mesh.yaml
  .nodegen-manifest.json  what gen wrote (commit it with out/)

The commands below render, check and explain that output and compare it with a
running cluster; nodegen COMMAND --help describes each.`

// commands lists every command, in the order help shows them.
func commands(s *streams) []*cli.Command {
	return []*cli.Command{
		initCommand(s),
		genCommand(s),
		checkCommand(s),
		vetCommand(s),
		exportCommand(s),
		docsCommand(s),
		explainCommand(s),
		driftCommand(s),
		rolloutCommand(s),
		versionCommand(s),
	}
}

// appAction runs when no command is given: --version prints the version;
// anything else is a usage mistake, with the usage on stderr.
func appAction(s *streams, c *cli.Context) error {
	if c.Bool("version") {
		return printVersion(s)
	}
	if c.NArg() > 0 {
		return nil // an unknown command: exitCode names it
	}
	tmpl := c.App.CustomAppHelpTemplate
	if tmpl == "" {
		tmpl = cli.AppHelpTemplate
	}
	cli.HelpPrinter(s.err, tmpl, c.App)
	return usageError{errors.New("no command given: run nodegen COMMAND (the commands are listed above)")}
}

func onUsageError(c *cli.Context, err error, _ bool) error {
	return usageError{err}
}

func exitCode(s *streams, err error, args []string, cmds []*cli.Command) int {
	var ue usageError
	switch {
	case err == nil:
		if len(args) > 0 && !isKnownCommand(cmds, args[0]) && args[0] != "" && args[0][0] != '-' {
			fmt.Fprintf(s.err, "nodegen: unknown command %q; see nodegen help\n", args[0])
			return ExitUsage
		}
		return ExitOK
	case errors.As(err, new(codedError)):
		var ce codedError
		errors.As(err, &ce)
		if !errors.Is(ce.error, errFindings) {
			fmt.Fprintf(s.err, "nodegen: %s\n", secrets.Redact(ce.error.Error()))
		}
		return ce.code
	case errors.Is(err, errFindings):
		return ExitFindings
	case errors.As(err, &ue):
		fmt.Fprintf(s.err, "nodegen: %v\n", ue.error)
		return ExitUsage
	case errors.As(err, new(*source.NameError)):
		fmt.Fprintf(s.err, "nodegen: %v\n", err)
		return ExitUsage
	default:
		fmt.Fprintf(s.err, "nodegen: %s\n", secrets.Redact(err.Error()))
		return ExitFindings
	}
}

// isKnownCommand reports whether name is one of cmds or help.
func isKnownCommand(cmds []*cli.Command, name string) bool {
	if name == "help" || name == "h" {
		return true
	}
	for _, c := range cmds {
		if c.HasName(name) {
			return true
		}
	}
	return false
}

// ioFlags are the flags every command shares.
type ioFlags struct {
	Source      string
	Clusters    cli.StringSlice
	Out         string
	Force       bool
	LockTimeout time.Duration
	// Full and Verbose are check's --full and --verbose (fastcheck.go).
	Full, Verbose bool
	// ByHand is check's --by-hand: after a clean check, print what nodegen
	// cannot verify and how to verify it by hand.
	ByHand bool
	// SourceDigest and ManifestDigest are set by a successful gen or
	// check: the source evaluated and out/'s record after the run.
	SourceDigest, ManifestDigest string
}

func noArgs(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageError{fmt.Errorf("%s takes no arguments, got %q", c.Command.Name, c.Args().First())}
	}
	return nil
}

// warnCommands are the commands that print the warnings of a valid source
// (validate.Warnings) to stderr; they still exit 0.
var warnCommands = map[string]bool{"gen": true, "vet": true}

func cwdForHint() string {
	if cwd, err := os.Getwd(); err == nil {
		return "in " + cwd
	}
	return "in the working directory"
}

// printFindings prints findings with paths relative to the working
// directory and returns errFindings.
func printFindings(s *streams, list diag.List) error {
	cwd, _ := os.Getwd()
	secrets.RedactList(list).Print(s.err, cwd)
	return errFindings
}

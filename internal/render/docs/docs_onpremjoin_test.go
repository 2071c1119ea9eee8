package docs_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render/docs"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestOnpremJoinDocsJoin plays the sh block of an onprem group's section
// of docs/nodegroups.md as a person runs it, from the directory out/ is
// in, with stand-ins for scp and ssh (a control-plane host whose sudo
// kubeadm token create prints a token, and the server, a directory the
// script is copied to and run in under bash with a kubeadm that keeps the
// configuration it is given): the server joins as the declared node the
// block names, with the token the control plane made, and kubeadm token
// create is asked for a token of kubeadm's default group with the TTL
// the text gives. day0.md's on-prem step names the script.
func TestOnpremJoinDocsJoin(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	_, files := testsrc.Render(t, testsrc.Copy(t, map[string]string{"nodes.cue": `nodeGroups: "onprem-gpu": nodes: {
	"a100-02": {cpu: 128, memoryGiB: 1024}
	"a100-01": {cpu: 128, memoryGiB: 1024}
}
cluster: controlPlaneNodes: "cp-1": {cpu: 16, memoryGiB: 64}
`}))
	script := layout.OnpremJoinPath("onprem-gpu")
	doc := string(files[layout.DocsPath])
	_, section, ok := strings.Cut(doc, "\n## onprem-gpu\n")
	if !ok {
		t.Fatalf("%s has no section for onprem-gpu", layout.DocsPath)
	}
	_, after, ok := strings.Cut(section, "**A new server** joins with `out/"+script+"`")
	if !ok {
		t.Fatalf("the onprem-gpu section does not name out/%s:\n%s", script, section)
	}
	_, block, ok := strings.Cut(after, "\n```sh\n")
	if !ok {
		t.Fatal("no sh block after the join's paragraph")
	}
	block, _, _ = strings.Cut(block, "\n```\n")
	if strings.Contains(block, "0123456789") {
		t.Fatal("the block holds a token")
	}
	if day0 := string(files[layout.Day0DocsPath]); !strings.Contains(day0, "join script (`out/"+script+"`)") {
		t.Errorf("%s's on-prem step does not name out/%s", layout.Day0DocsPath, script)
	}

	const token = "q1w2e3.0123456789abcdef"
	dir := t.TempDir()
	work, server, bin, capDir := filepath.Join(dir, "work"), filepath.Join(dir, "server"), filepath.Join(dir, "bin"), filepath.Join(dir, "capture")
	for _, d := range []string{work, server, bin, capDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(work, "out", filepath.Dir(script)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "out", script), files[script], 0o644); err != nil {
		t.Fatal(err)
	}
	stub := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!"+bash+"\nset -eu\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	realPath := os.Getenv("PATH")
	// scp FILE HOST: copies FILE into the server's directory.
	stub("scp", `[[ $# == 2 && "$2" == a100-01: ]] || { echo "scp $*: want FILE a100-01:" >&2; exit 1; }
PATH=`+shq(realPath)+` cp -- "$1" `+shq(server)+`/
`)
	// ssh HOST CMD...: the control plane prints a token; the server runs
	// the command (sudo dropped: the test runs it as it is) in its
	// directory, with the stub kubeadm first on PATH.
	stub("ssh", `host="$1"; shift
case "${host}" in
cp.example)
	printf '%s\n' "$*" >`+shq(filepath.Join(capDir, "token-create"))+`
	[[ "$1 $2 $3 $4" == "sudo kubeadm token create" ]] || exit 1
	echo `+token+`
	;;
a100-01)
	[[ "$1" == sudo ]] || exit 1
	shift
	cd `+shq(server)+`
	PATH=`+shq(filepath.Join(dir, "kubeadm-bin"))+`:`+shq(realPath)+` exec "$@"
	;;
*) echo "ssh: unknown host ${host}" >&2; exit 1 ;;
esac
`)
	kbin := filepath.Join(dir, "kubeadm-bin")
	if err := os.Mkdir(kbin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kbin, "kubeadm"), []byte("#!"+bash+"\n[[ \"$1 $2\" == 'join --config' ]] || exit 1\ncp -- \"$3\" "+shq(filepath.Join(capDir, "config"))+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bash, "-euo", "pipefail", "-c", block)
	if os.Geteuid() != 0 {
		// The join script joins only as root (sudo in the docs): as another
		// user, the block runs as root in a user namespace of its own.
		unshare, err := exec.LookPath("unshare")
		if err != nil || exec.Command(unshare, "--user", "--map-root-user", "true").Run() != nil {
			t.Skip("not root, and no user namespace to run the block as root in")
		}
		cmd = exec.Command(unshare, "--user", "--map-root-user", bash, "-euo", "pipefail", "-c", block)
	}
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + bin + ":" + realPath, docs.Day0ControlPlaneHostVar + "=cp.example", "HOME=" + dir}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the block: %v\n%s\n%s", err, block, out.String())
	}
	create, err := os.ReadFile(filepath.Join(capDir, "token-create"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(create)), "sudo kubeadm token create --ttl 30m --description nodegen-onprem-join"; got != want || strings.Contains(got, "--groups") {
		t.Errorf("the control plane ran %q, want %q (kubeadm's default group)", got, want)
	}
	cfg, err := kubeadm.DecodeJoinConfiguration(mustRead(t, filepath.Join(capDir, "config")))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := cfg.ExtraArg("provider-id")
	if cfg.NodeRegistration.Name != "a100-01" || cfg.Discovery.BootstrapToken.Token != token || pid != model.UnmanagedProviderID("a100-01") {
		t.Errorf("joined as %q with token %q and provider-id %q, want a100-01, the control plane's token and %s",
			cfg.NodeRegistration.Name, cfg.Discovery.BootstrapToken.Token, pid, model.UnmanagedProviderID("a100-01"))
	}
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

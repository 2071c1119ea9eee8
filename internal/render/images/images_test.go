package images_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/render/images"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
	"github.com/nodegen/nodegen/internal/verify"
)

const (
	cpuFamily = "k8s-node-1-35"
	gpuFamily = "k8s-node-gpu-1-35"
)

// joinScriptCommands returns the commands a rendered startup script calls:
// the literal first word of every simple command that is not one of the
// script's own functions nor a bash builtin or keyword, plus the command
// a `timeout` runs.
func joinScriptCommands(t *testing.T, script []byte) []string {
	t.Helper()
	f, err := syntax.NewParser().Parse(bytes.NewReader(script), "startup-script.sh")
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		if fd, ok := n.(*syntax.FuncDecl); ok {
			funcs[fd.Name.Value] = true
		}
		return true
	})
	builtins := map[string]bool{"command": true, "echo": true, "exit": true, "printf": true, "return": true, "set": true, "trap": true, "true": true, "umask": true, "local": true, "export": true, "read": true, "shift": true, ":": true, "[": true, "test": true, "false": true, "cd": true, "wait": true, "unset": true, "readonly": true, "declare": true, "break": true, "continue": true, "eval": true, "exec": true}
	seen := map[string]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		c, ok := n.(*syntax.CallExpr)
		if !ok || len(c.Args) == 0 {
			return true
		}
		words := c.Args
		for len(words) > 0 {
			l := words[0].Lit()
			if l == "" || funcs[l] || builtins[l] {
				break
			}
			seen[l] = true
			if l != "timeout" {
				break
			}
			// timeout [options] DURATION COMMAND ...
			words = words[1:]
			for len(words) > 0 && strings.HasPrefix(words[0].Lit(), "-") {
				words = words[1:]
			}
			if len(words) > 0 {
				words = words[1:]
			}
		}
		return true
	})
	return slices.Sorted(func(yield func(string) bool) {
		for k := range seen {
			if !yield(k) {
				return
			}
		}
	})
}

// TestImageBuildScripts: one build script per image family the groups
// use, bash syntax (and shellcheck when it is installed), constants as
// the source says; the GPU family alone is a GPU host; verify refuses a
// script whose version or family disagrees with the source.
func TestImageBuildScripts(t *testing.T) {
	src, files := testsrc.Example(t)
	var scripts []string
	for _, p := range files.Paths() {
		if strings.HasPrefix(p, layout.ImagesDir+"/") {
			scripts = append(scripts, p)
		}
	}
	if want := []string{layout.ImageBuildPath(cpuFamily), layout.ImageBuildPath(gpuFamily)}; !slices.Equal(scripts, want) {
		t.Fatalf("image scripts %v, want %v", scripts, want)
	}
	dir := t.TempDir()
	for _, p := range scripts {
		path := filepath.Join(dir, strings.ReplaceAll(p, "/", "_"))
		if err := os.WriteFile(path, files[p], 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", p, err, out)
		}
		if sc, err := exec.LookPath("shellcheck"); err == nil {
			if out, err := exec.Command(sc, "-s", "bash", path).CombinedOutput(); err != nil {
				t.Errorf("shellcheck %s: %v\n%s", p, err, out)
			}
		}
	}
	for p, want := range map[string]string{layout.ImageBuildPath(cpuFamily): "readonly GPU_HOST=false\n", layout.ImageBuildPath(gpuFamily): "readonly GPU_HOST=true\n"} {
		if !strings.Contains(string(files[p]), want) {
			t.Errorf("%s lacks %q", p, want)
		}
	}
	if err := verify.All(src, files); err != nil {
		t.Fatalf("verify: %v", err)
	}
	for _, c := range []struct{ old, new string }{
		{"readonly KUBERNETES_VERSION=1.35.2\n", "readonly KUBERNETES_VERSION=1.35.1\n"},
		{"readonly KUBERNETES_MINOR=v1.35\n", "readonly KUBERNETES_MINOR=v1.34\n"},
		{"readonly IMAGE_FAMILY=" + gpuFamily + "\n", "readonly IMAGE_FAMILY=k8s-node-gpu\n"},
		{"readonly GPU_HOST=true\n", "readonly GPU_HOST=false\n"},
		{"readonly KUBERNETES_PACKAGE_VERSION=1.35.2-1.1\n", "readonly KUBERNETES_PACKAGE_VERSION=1.34.2-1.1\n"},
	} {
		broken := layout.Files{}
		for k, v := range files {
			broken[k] = v
		}
		p := layout.ImageBuildPath(gpuFamily)
		broken[p] = []byte(strings.Replace(string(files[p]), c.old, c.new, 1))
		if bytes.Equal(broken[p], files[p]) {
			t.Fatalf("%q not in %s", c.old, p)
		}
		if err := verify.All(src, broken); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("verify accepts %s with %q: %v", p, strings.TrimSpace(c.new), err)
		}
	}
	delete(files, layout.ImageBuildPath(cpuFamily))
	if err := verify.All(src, files); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("verify accepts a missing image script: %v", err)
	}
}

// fakeBin writes an executable script named name into dir.
func fakeBin(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/bash\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

type imageRun struct {
	root, log string
	out       string
	err       error
}

// runImageScript runs a build script with bash against fakes of the
// package manager, systemd, curl, gpg, kubeadm and containerd (each
// recording its arguments), into IMAGE_ROOT=a temporary directory whose
// etc/os-release says osID osVersion.
func runImageScript(t *testing.T, script []byte, osID, osVersion, containerdVersion, kubeadmVersion string) imageRun {
	t.Helper()
	return runImageScriptOnKernel(t, script, osID, osVersion, containerdVersion, kubeadmVersion, "6.8.0-1019-gcp")
}

// runImageScriptOnKernel is runImageScript on a builder VM whose kernel
// release (uname -r) is kernel; ctr and nvidia-ctk are fakes too, and
// nvidia-ctk fails unless containerd's configuration was written first.
func runImageScriptOnKernel(t *testing.T, script []byte, osID, osVersion, containerdVersion, kubeadmVersion, kernel string) imageRun {
	t.Helper()
	dir := t.TempDir()
	bin, root := filepath.Join(dir, "bin"), filepath.Join(dir, "root")
	for _, d := range []string{bin, filepath.Join(root, "etc", "apt", "sources.list.d")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "os-release"), []byte("ID="+osID+"\nVERSION_ID=\""+osVersion+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "calls.log")
	record := `echo "$(basename "$0") $*" >>"` + log + `"`
	fakeBin(t, bin, "id", `echo 0`)
	for _, name := range []string{"apt-get", "apt-mark", "update-initramfs", "systemctl", "nft", "openssl"} {
		fakeBin(t, bin, name, record)
	}
	fakeBin(t, bin, "curl", record+"\necho FAKE-KEY")
	fakeBin(t, bin, "gpg", record+`
while [ $# -gt 0 ]; do [ "$1" = -o ] && { cat >"$2"; exit 0; }; shift; done
exit 1`)
	fakeBin(t, bin, "kubeadm", record+"\necho "+kubeadmVersion)
	fakeBin(t, bin, "containerd", record+"\necho containerd github.com/containerd/containerd "+containerdVersion+" 1234abcd")
	fakeBin(t, bin, "uname", `[ "$1" = -r ] || exit 1; echo `+kernel)
	fakeBin(t, bin, "ctr", record)
	fakeBin(t, bin, "nvidia-ctk", record+`
[ -s "`+filepath.Join(root, "etc", "containerd", "config.toml")+`" ] || { echo "nvidia-ctk: no containerd config" >&2; exit 1; }`)
	cmd := exec.Command("bash", "-s")
	cmd.Stdin = bytes.NewReader(script)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "IMAGE_ROOT=" + root}
	out, err := cmd.CombinedOutput()
	calls, _ := os.ReadFile(log)
	return imageRun{root: root, log: string(calls), out: string(out), err: err}
}

func (r imageRun) file(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.root, rel))
	if err != nil {
		t.Fatalf("%s not written: %v\n%s", rel, err, r.out)
	}
	return string(b)
}

// TestImageBuildAgainstFakes runs each family's script with bash against
// fakes: it installs every package the join script's commands come from,
// kubelet, kubeadm and kubectl at the source's version from the minor's
// pkgs.k8s.io repository and holds them, configures containerd with the
// systemd cgroup driver and kubeadm's sandbox image, blacklists nouveau
// on the GPU family only and installs no NVIDIA package; and it refuses
// another OS, a containerd too old and a kubeadm of another version.
func TestImageBuildAgainstFakes(t *testing.T) {
	_, files := testsrc.Example(t)
	join := joinScriptCommands(t, files[layout.StartupScriptPath("gpu-t4")])
	if !slices.Contains(join, "kubeadm") || !slices.Contains(join, "curl") {
		t.Fatalf("the join script's commands %v lack kubeadm or curl: the walk is wrong", join)
	}
	for _, family := range []string{cpuFamily, gpuFamily} {
		t.Run(family, func(t *testing.T) {
			r := runImageScript(t, files[layout.ImageBuildPath(family)], "ubuntu", "24.04", "1.7.24", "v1.35.2")
			if r.err != nil {
				t.Fatalf("build: %v\n%s", r.err, r.out)
			}
			var installed []string
			for _, l := range strings.Split(r.log, "\n") {
				if rest, ok := strings.CutPrefix(l, "apt-get install "); ok {
					installed = append(installed, strings.Fields(rest)...)
				}
			}
			for _, cmd := range join {
				pkg, ok := images.JoinPackages[cmd]
				if !ok {
					t.Errorf("the join script calls %s, which the image recipe does not know", cmd)
					continue
				}
				if pkg == "kubeadm" {
					pkg = `kubeadm=1.35.2-1.1`
				}
				if !slices.Contains(installed, pkg) {
					t.Errorf("the join script calls %s (package %s), which the image does not install (installed: %v)", cmd, pkg, installed)
				}
			}
			for _, pkg := range []string{"kubelet=1.35.2-1.1", "kubectl=1.35.2-1.1", "containerd", "google-guest-agent"} {
				if !slices.Contains(installed, pkg) {
					t.Errorf("%s not installed: %v", pkg, installed)
				}
			}
			if family == cpuFamily {
				for _, p := range installed {
					if strings.Contains(p, "nvidia") || strings.Contains(p, "cuda") {
						t.Errorf("a CPU family installs %s", p)
					}
				}
			}
			if !strings.Contains(r.log, "apt-mark hold kubelet kubeadm kubectl\n") {
				t.Errorf("kubelet, kubeadm, kubectl not held:\n%s", r.log)
			}
			if !strings.Contains(r.log, "curl -fsSL --retry 5 https://pkgs.k8s.io/core:/stable:/v1.35/deb/Release.key\n") {
				t.Errorf("the v1.35 repository key not fetched:\n%s", r.log)
			}
			if got := r.file(t, "etc/apt/sources.list.d/kubernetes.list"); got != "deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://pkgs.k8s.io/core:/stable:/v1.35/deb/ /\n" {
				t.Errorf("kubernetes.list: %q", got)
			}
			if got := r.file(t, "etc/apt/keyrings/kubernetes-apt-keyring.gpg"); got != "FAKE-KEY\n" {
				t.Errorf("keyring %q: not the key curl fetched", got)
			}
			cfg := r.file(t, "etc/containerd/config.toml")
			for _, want := range []string{"SystemdCgroup = true", `sandbox_image = "registry.k8s.io/pause:3.10.1"`, "version = 2"} {
				if !strings.Contains(cfg, want) {
					t.Errorf("containerd config lacks %q:\n%s", want, cfg)
				}
			}
			if got := r.file(t, "etc/sysctl.d/90-kubernetes.conf"); !strings.Contains(got, "net.ipv4.ip_forward = 1") {
				t.Errorf("sysctl: %q", got)
			}
			if !strings.Contains(r.log, "systemctl enable containerd.service kubelet.service google-guest-agent.service\n") {
				t.Errorf("services not enabled:\n%s", r.log)
			}
			_, err := os.Stat(filepath.Join(r.root, "etc/modprobe.d/nodegen-blacklist-nouveau.conf"))
			if gpu := family == gpuFamily; gpu != (err == nil) || gpu != strings.Contains(r.log, "update-initramfs -u") {
				t.Errorf("GPU family %v, nouveau blacklisted %v, initramfs %v", gpu, err == nil, strings.Contains(r.log, "update-initramfs -u"))
			}
			if got := r.file(t, "etc/machine-id"); got != "" {
				t.Errorf("machine-id %q left in the image", got)
			}
		})
	}
	t.Run("containerd 2", func(t *testing.T) {
		r := runImageScript(t, files[layout.ImageBuildPath(cpuFamily)], "ubuntu", "24.04", "v2.1.4", "v1.35.2")
		if r.err != nil {
			t.Fatalf("build: %v\n%s", r.err, r.out)
		}
		cfg := r.file(t, "etc/containerd/config.toml")
		for _, want := range []string{"version = 3", `sandbox = "registry.k8s.io/pause:3.10.1"`, "SystemdCgroup = true", `"io.containerd.cri.v1.runtime"`} {
			if !strings.Contains(cfg, want) {
				t.Errorf("containerd 2 config lacks %q:\n%s", want, cfg)
			}
		}
	})
	for name, c := range map[string]struct{ os, ver, containerd, kubeadm, want string }{
		"another OS":      {"debian", "12", "1.7.24", "v1.35.2", "the builder VM runs debian 12, not ubuntu 24.04"},
		"old containerd":  {"ubuntu", "24.04", "1.6.20", "v1.35.2", "containerd 1.6 is older than 1.7"},
		"another kubeadm": {"ubuntu", "24.04", "1.7.24", "v1.35.1", "kubeadm is v1.35.1, not v1.35.2"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runImageScript(t, files[layout.ImageBuildPath(cpuFamily)], c.os, c.ver, c.containerd, c.kubeadm)
			if r.err == nil || !strings.Contains(r.out, "ERROR: "+c.want) {
				t.Errorf("err %v, output:\n%s\nwant ERROR: %s", r.err, r.out, c.want)
			}
		})
	}
}

// installedPackages are the packages of every apt-get install a run
// made, in order.
func (r imageRun) installedPackages() []string {
	var out []string
	for _, l := range strings.Split(r.log, "\n") {
		if rest, ok := strings.CutPrefix(l, "apt-get install "); ok {
			for _, f := range strings.Fields(rest) {
				if !strings.HasPrefix(f, "-") {
					out = append(out, f)
				}
			}
		}
	}
	return out
}

// pulled are the images a run pulled into containerd's k8s.io namespace,
// after containerd was restarted with its configuration.
func (r imageRun) pulled(t *testing.T) []string {
	t.Helper()
	var out []string
	restarted := false
	for _, l := range strings.Split(r.log, "\n") {
		if l == "systemctl restart containerd.service" {
			restarted = true
		}
		if ref, ok := strings.CutPrefix(l, "ctr --namespace k8s.io images pull "); ok {
			if !restarted {
				t.Errorf("pulls %s before containerd is restarted with its configuration", ref)
			}
			out = append(out, ref)
		}
	}
	slices.Sort(out)
	return out
}

// operatorValues decodes the GPU Operator values nodegen rendered: the
// driver and toolkit switches and the image each operand section pins.
func operatorValues(t *testing.T, files layout.Files) (driver, toolkit bool, refs map[string]string) {
	t.Helper()
	var v map[string]struct {
		Enabled    *bool  `json:"enabled"`
		Repository string `json:"repository"`
		Image      string `json:"image"`
		Version    string `json:"version"`
	}
	if err := yaml.Unmarshal(files[layout.GPUOperatorValuesPath], &v); err != nil {
		t.Fatal(err)
	}
	if v["driver"].Enabled == nil || v["toolkit"].Enabled == nil {
		t.Fatalf("the values set no driver.enabled or toolkit.enabled:\n%s", files[layout.GPUOperatorValuesPath])
	}
	refs = map[string]string{}
	for k, s := range v {
		if s.Version != "" {
			refs[k] = s.Repository + "/" + s.Image + ":" + s.Version
		}
	}
	return *v["driver"].Enabled, *v["toolkit"].Enabled, refs
}

// TestImageBuildBakesDriver runs the build scripts with bash against
// fakes, on the tests' example with its GPU family baking driver branch
// 580 (open modules for the gcp kernel, the defaults) and on the example
// as it is, which leaves the driver to the GPU Operator:
//   - baked: the GPU family installs Ubuntu's signed modules for the gcp
//     kernel, the branch's user space and the container toolkit at the
//     operator's version, holds them, gives containerd the nvidia
//     runtime after writing its configuration, and the operator's values
//     turn its driver and toolkit off; on a builder VM whose kernel is of
//     another flavour it fails before installing any of them;
//   - the CPU family installs none of it;
//   - operator: the GPU family installs no NVIDIA package and the values
//     keep the operator's driver and toolkit;
//   - every family pulls into containerd (k8s.io) the sandbox image,
//     kube-proxy at the control plane's version and, on the GPU family,
//     the taint remover's image and exactly the operand images the
//     values pin, after containerd is restarted.
func TestImageBuildBakesDriver(t *testing.T) {
	src, files := testsrc.Render(t, testsrc.Copy(t, map[string]string{
		"images.cue": `cluster: imageFamilies: "` + gpuFamily + `": gpuDriver: image: branch: "580"` + "\n",
	}))
	if err := verify.All(src, files); err != nil {
		t.Fatalf("verify: %v", err)
	}
	gpuScript := files[layout.ImageBuildPath(gpuFamily)]
	baked := []string{"linux-modules-nvidia-580-server-open-gcp", "nvidia-utils-580-server", "libnvidia-compute-580-server",
		"nvidia-container-toolkit=1.20.0-1", "nvidia-container-toolkit-base=1.20.0-1", "libnvidia-container-tools=1.20.0-1", "libnvidia-container1=1.20.0-1"}
	base := []string{"registry.k8s.io/kube-proxy:v1.35.2", "registry.k8s.io/pause:3.10.1"}
	gpuPulls := func(refs map[string]string) []string {
		out := append(slices.Clone(base), src.Cluster.TaintRemover.Image)
		for _, r := range refs {
			out = append(out, r)
		}
		slices.Sort(out)
		return out
	}

	t.Run("baked", func(t *testing.T) {
		driver, toolkit, refs := operatorValues(t, files)
		if driver || toolkit {
			t.Errorf("values driver.enabled %t, toolkit.enabled %t with a baked driver", driver, toolkit)
		}
		if _, ok := refs["toolkit"]; ok {
			t.Errorf("the values pin a toolkit image the baked nodes do not run: %v", refs)
		}
		r := runImageScript(t, gpuScript, "ubuntu", "24.04", "1.7.24", "v1.35.2")
		if r.err != nil {
			t.Fatalf("build: %v\n%s", r.err, r.out)
		}
		installed := r.installedPackages()
		for _, p := range baked {
			if !slices.Contains(installed, p) {
				t.Errorf("%s not installed: %v", p, installed)
			}
		}
		if !strings.Contains(r.log, "apt-mark hold linux-image-gcp linux-modules-nvidia-580-server-open-gcp nvidia-utils-580-server libnvidia-compute-580-server\n") {
			t.Errorf("the driver's packages are not held:\n%s", r.log)
		}
		if got := r.file(t, "etc/apt/sources.list.d/nvidia-container-toolkit.list"); got != "deb [signed-by=/etc/apt/keyrings/nvidia-container-toolkit.gpg] https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /\n" {
			t.Errorf("nvidia-container-toolkit.list: %q", got)
		}
		if want := "nvidia-ctk runtime configure --runtime=containerd --set-as-default --config=" + filepath.Join(r.root, "etc/containerd/config.toml") + "\n"; !strings.Contains(r.log, want) {
			t.Errorf("containerd not given the nvidia runtime (%q):\n%s", want, r.log)
		}
		if got, want := r.pulled(t), gpuPulls(refs); !slices.Equal(got, want) {
			t.Errorf("pulled\n%v\nwant (sandbox, kube-proxy, taint remover, the values' operands)\n%v", got, want)
		}
	})
	t.Run("kernel of another flavour", func(t *testing.T) {
		r := runImageScriptOnKernel(t, gpuScript, "ubuntu", "24.04", "1.7.24", "v1.35.2", "6.8.0-45-generic")
		if r.err == nil || !strings.Contains(r.out, "ERROR: the builder VM runs kernel 6.8.0-45-generic, not of the gcp flavour linux-modules-nvidia-580-server-open-gcp is built for") {
			t.Errorf("err %v, output:\n%s", r.err, r.out)
		}
		for _, p := range r.installedPackages() {
			if strings.Contains(p, "nvidia") {
				t.Errorf("installs %s on a kernel its modules are not built for", p)
			}
		}
	})
	t.Run("CPU family", func(t *testing.T) {
		r := runImageScript(t, files[layout.ImageBuildPath(cpuFamily)], "ubuntu", "24.04", "1.7.24", "v1.35.2")
		if r.err != nil {
			t.Fatalf("build: %v\n%s", r.err, r.out)
		}
		for _, p := range r.installedPackages() {
			if strings.Contains(p, "nvidia") {
				t.Errorf("a CPU family installs %s", p)
			}
		}
		if strings.Contains(r.log, "nvidia-ctk") {
			t.Errorf("a CPU family runs nvidia-ctk:\n%s", r.log)
		}
		if got := r.pulled(t); !slices.Equal(got, base) {
			t.Errorf("pulled %v, want %v", got, base)
		}
	})
	t.Run("operator", func(t *testing.T) {
		src, files := testsrc.Example(t)
		if err := verify.All(src, files); err != nil {
			t.Fatalf("verify: %v", err)
		}
		driver, toolkit, refs := operatorValues(t, files)
		if !driver || !toolkit {
			t.Errorf("values driver.enabled %t, toolkit.enabled %t without a baked driver", driver, toolkit)
		}
		if _, ok := refs["toolkit"]; !ok {
			t.Errorf("the values pin no toolkit image: %v", refs)
		}
		r := runImageScript(t, files[layout.ImageBuildPath(gpuFamily)], "ubuntu", "24.04", "1.7.24", "v1.35.2")
		if r.err != nil {
			t.Fatalf("build: %v\n%s", r.err, r.out)
		}
		for _, p := range r.installedPackages() {
			if strings.Contains(p, "nvidia") || strings.Contains(p, "cuda") {
				t.Errorf("installs %s, which the GPU Operator installs itself", p)
			}
		}
		if got, want := r.pulled(t), gpuPulls(refs); !slices.Equal(got, want) {
			t.Errorf("pulled\n%v\nwant\n%v", got, want)
		}
	})
}

// Package images renders out/images, the node image recipe: one build
// script per image family, run as root on a builder VM booted from
// gce.ImageBaseFamily, whose disk becomes the family's next image. What
// it installs is what a node of the family runs before and during its
// join:
//
//   - containerd, configured as kubeadm's kubelet expects it: the systemd
//     cgroup driver (kubeadm's KubeletConfiguration default cgroupDriver
//     since v1.22) and the sandbox image of the kubeadm release
//     (kubernetes cmd/kubeadm/app/constants/constants.go, PauseVersion);
//   - kubelet, kubeadm and kubectl at the groups' exact version, from the
//     Kubernetes project's package repository of its minor (pkgs.k8s.io,
//     "core:/stable:/v<minor>/deb"), held at it;
//   - every command the join script calls (imageJoinPackages);
//   - the guest agent, which runs the startup script;
//   - for GPU families, nouveau kept out of the kernel (neither NVIDIA's
//     modules nor the GPU Operator's driver container load while it holds
//     the GPU), and, when the source bakes the driver
//     (cluster.imageFamilies.<family>.gpuDriver.image), Ubuntu's
//     precompiled, signed NVIDIA modules for the image's kernel flavour,
//     their user space and NVIDIA's container toolkit, so that the GPU
//     Operator runs with driver.enabled and toolkit.enabled false and a
//     new node builds and downloads nothing for its driver;
//   - the images a new node runs before it is usable
//     (model.Source.PrePulledImages), pulled into containerd at build.
package images

import (
	"fmt"
	"strings"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// imagePauseVersion is kubeadm's PauseVersion (the sandbox image tag) of a
// Kubernetes minor, from cmd/kubeadm/app/constants/constants.go of each
// release branch.
func imagePauseVersion(minor int) string {
	switch {
	case minor <= 32:
		return "3.10"
	default:
		return "3.10.1"
	}
}

// imageContainerdMinimum is the oldest containerd a Kubernetes minor runs
// with: 1.7 through 1.35, 2.0 from 1.36 on (1.35 is the last release
// that supports containerd 1.x).
func imageContainerdMinimum(minor int) string {
	if minor >= 36 {
		return "2.0"
	}
	return "1.7"
}

// imageJoinPackages maps each command the rendered join script calls
// (the first word of a simple command, outside its own functions and
// builtins) to the Ubuntu package that provides it.
var imageJoinPackages = map[string]string{
	"base64":    "coreutils",
	"cat":       "coreutils",
	"dirname":   "coreutils",
	"head":      "coreutils",
	"ls":        "coreutils",
	"mkdir":     "coreutils",
	"rm":        "coreutils",
	"sha256sum": "coreutils",
	"sleep":     "coreutils",
	"timeout":   "coreutils",
	"tr":        "coreutils",
	"curl":      "curl",
	"nft":       "nftables",
	"openssl":   "openssl",
	"sed":       "sed",
	"systemctl": "systemd",
	"kubeadm":   "kubeadm",
}

// imagePackagesFromArchive are the packages the script installs from the
// OS archive, in install order.
var imagePackagesFromArchive = []string{"ca-certificates", "curl", "gnupg", "coreutils", "sed", "nftables", "openssl", "systemd", "containerd", "google-guest-agent"}

// imageKubernetesPackages are the packages installed from pkgs.k8s.io.
var imageKubernetesPackages = []string{"kubelet", "kubeadm", "kubectl"}

// imagePackageRevision is the Debian revision of pkgs.k8s.io's packages:
// kubeadm 1.35.2 is package version 1.35.2-1.1.
const imagePackageRevision = "-1.1"

// Images renders one build script per image family the cloud groups
// boot from. A family whose groups need different images (another
// Kubernetes version or architecture) gets none: no one image serves
// them all.
func Images(src *model.Source, files layout.Files) error {
	images, _ := model.BuildableImages(src.NodeImages())
	for _, im := range images {
		b, err := imageBuildScript(src, im)
		if err != nil {
			return fmt.Errorf("image family %s: %w", im.Family, err)
		}
		files[layout.ImageBuildPath(im.Family)] = b
	}
	return nil
}

// commentLines makes each line of s a shell comment indented under "#".
func commentLines(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("#   " + l)
		}
	}
	return b.String()
}

func imageBuildScript(src *model.Source, im model.NodeImage) ([]byte, error) {
	v, err := model.ParseKubeVersion(im.KubernetesVersion)
	if err != nil {
		return nil, err
	}
	minor := "v" + v.MinorString()
	what, driver := "CPU nodes", "none"
	if im.GPU {
		what, driver = "GPU nodes (the GPU Operator installs the driver and toolkit)", "operator"
		if d := im.Driver; d != nil {
			what, driver = fmt.Sprintf("GPU nodes (NVIDIA driver %s, %s kernel modules for the %s kernel, and the container toolkit baked in)", d.Branch, d.KernelModules, d.KernelFlavour), "image"
		}
	}
	var b strings.Builder
	b.WriteString("#!/usr/bin/env bash\n")
	b.WriteString(layout.HashHeader(src.Name))
	fmt.Fprintf(&b, `#
# Builds the node image of family %[1]s (project %[2]s) for node
# group(s) %[3]s: Kubernetes %[4]s, %[5]s, %[6]s.
# Run it as root on a builder VM booted from %[7]s's family %[8]s,
# then make the family's next image from the VM's disk:
#
%[16]s#
# IMAGE_ROOT, empty on the builder VM, is prefixed to every file the script
# writes (a chroot's root, or a test's directory).
set -euo pipefail

readonly KUBERNETES_VERSION=%[4]s
readonly KUBERNETES_MINOR=%[11]s
readonly KUBERNETES_PACKAGE_VERSION=%[4]s%[12]s
readonly PAUSE_IMAGE=registry.k8s.io/pause:%[13]s
readonly CONTAINERD_MINIMUM=%[14]s
readonly GPU_HOST=%[15]t
readonly GPU_DRIVER=%[9]s
readonly IMAGE_FAMILY=%[1]s
readonly PRE_PULLED_IMAGES="%[10]s"
%[17]sroot="${IMAGE_ROOT:-}"
`, im.Family, im.Project, strings.Join(im.Groups, ", "), im.KubernetesVersion, im.Arch, what,
		gce.ImageBaseProject, gce.ImageBaseFamily(im.Arch), driver, strings.Join(src.PrePulledImages(im), " "),
		minor, imagePackageRevision, imagePauseVersion(v.Minor), imageContainerdMinimum(v.Minor), im.GPU,
		commentLines(src.ImageBuildCommands(im, "build.sh # this file")), driverConstants(im.Driver))
	fmt.Fprintf(&b, `
fail() { echo "nodegen-image[$IMAGE_FAMILY]: ERROR: $*" >&2; exit 1; }
step() { echo "nodegen-image[$IMAGE_FAMILY]: $*"; }

[ "$(id -u)" = 0 ] || fail "run as root"
# shellcheck source=/dev/null
. "$root/etc/os-release"
if [ "${ID:-}" != %[1]s ] || [ "${VERSION_ID:-}" != %[2]s ]; then
	fail "the builder VM runs ${ID:-?} ${VERSION_ID:-?}, not %[1]s %[2]s: boot it from %[3]s/%[4]s"
fi

export DEBIAN_FRONTEND=noninteractive
step "packages from the %[1]s archive"
apt-get update -q
apt-get install -y -q --no-install-recommends %[5]s

step "kubelet, kubeadm and kubectl $KUBERNETES_PACKAGE_VERSION from pkgs.k8s.io"
install -d -m 0755 "$root/etc/apt/keyrings"
curl -fsSL --retry 5 "https://pkgs.k8s.io/core:/stable:/$KUBERNETES_MINOR/deb/Release.key" |
	gpg --batch --yes --dearmor -o "$root/etc/apt/keyrings/kubernetes-apt-keyring.gpg"
echo "deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://pkgs.k8s.io/core:/stable:/$KUBERNETES_MINOR/deb/ /" >"$root/etc/apt/sources.list.d/kubernetes.list"
apt-get update -q
apt-get install -y -q --no-install-recommends %[6]s
apt-mark hold %[7]s
installed="$(kubeadm version -o short)"
[ "$installed" = "v$KUBERNETES_VERSION" ] || fail "kubeadm is $installed, not v$KUBERNETES_VERSION"

step "containerd: systemd cgroup driver, sandbox image $PAUSE_IMAGE"
have="$(containerd --version | sed -n 's/^containerd [^ ]* v\{0,1\}\([0-9]*\.[0-9]*\).*/\1/p')"
[ -n "$have" ] || fail "cannot read containerd's version"
[ "$(printf '%%s\n%%s\n' "$CONTAINERD_MINIMUM" "$have" | sort -V | head -n 1)" = "$CONTAINERD_MINIMUM" ] ||
	fail "containerd $have is older than $CONTAINERD_MINIMUM, the oldest Kubernetes $KUBERNETES_MINOR runs with"
install -d -m 0755 "$root/etc/containerd"
case "$have" in
1.*)
	cat >"$root/etc/containerd/config.toml" <<EOF
version = 2

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
EOF
	;;
*)
	cat >"$root/etc/containerd/config.toml" <<EOF
version = 3

[plugins."io.containerd.cri.v1.images".pinned_images]
  sandbox = "$PAUSE_IMAGE"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  SystemdCgroup = true
EOF
	;;
esac

step "kernel modules and sysctls kubeadm's preflight checks"
install -d -m 0755 "$root/etc/modules-load.d" "$root/etc/sysctl.d"
printf 'overlay\nbr_netfilter\n' >"$root/etc/modules-load.d/kubernetes.conf"
printf 'net.ipv4.ip_forward = 1\nnet.bridge.bridge-nf-call-iptables = 1\n' >"$root/etc/sysctl.d/90-kubernetes.conf"

if [ "$GPU_HOST" = true ]; then
	step "GPU host: nouveau kept out; the NVIDIA driver and toolkit come from: $GPU_DRIVER"
	install -d -m 0755 "$root/etc/modprobe.d"
	printf 'blacklist nouveau\noptions nouveau modeset=0\n' >"$root/etc/modprobe.d/nodegen-blacklist-nouveau.conf"
	update-initramfs -u
fi
%[9]s
step "images a new node runs before it is usable, pulled into containerd (namespace k8s.io)"
systemctl restart containerd.service
read -r -a pulls <<<"$PAUSE_IMAGE $PRE_PULLED_IMAGES"
for image in "${pulls[@]}"; do
	ctr --namespace k8s.io images pull "$image" >/dev/null || fail "cannot pull $image"
done

step "services"
systemctl enable containerd.service kubelet.service google-guest-agent.service
systemctl cat google-startup-scripts.service >/dev/null ||
	fail "the guest agent has no google-startup-scripts.service: the join script would never run"
for cmd in %[8]s; do
	command -v "$cmd" >/dev/null || fail "$cmd is missing: the join script calls it"
done

step "clean: each VM gets its own machine ID"
apt-get clean
: >"$root/etc/machine-id"
step "done: stop the VM and make the image of family $IMAGE_FAMILY"
`, gce.ImageBaseOS, gce.ImageBaseVersion, gce.ImageBaseProject, gce.ImageBaseFamily(im.Arch),
		strings.Join(imagePackagesFromArchive, " "),
		kubePackagesPinned(), strings.Join(imageKubernetesPackages, " "), joinCommands(), bakedDriverSteps(im.Driver))
	return []byte(b.String()), nil
}

// driverConstants are the constants of a family that bakes the NVIDIA
// driver: its branch's packages and the kernel flavour they are built
// for.
func driverConstants(d *model.BakedDriver) string {
	if d == nil {
		return ""
	}
	return fmt.Sprintf(`readonly NVIDIA_KERNEL_FLAVOUR=%s
readonly NVIDIA_MODULES_PACKAGE=%s
readonly NVIDIA_USER_SPACE_PACKAGES="%s"
readonly NVIDIA_CONTAINER_TOOLKIT_VERSION=%s
`, d.KernelFlavour, d.ModulesPackage(), strings.Join(d.UserSpacePackages(), " "), model.ContainerToolkitPackageVersion)
}

// bakedDriverSteps install the baked driver and the container toolkit:
//   - the modules only on a builder VM whose kernel is of the flavour
//     they are built for (uname -r ends in -<flavour>): Ubuntu's
//     linux-modules-nvidia-* packages hold modules for one flavour's
//     kernels, signed with Canonical's key, so Secure Boot loads them
//     and nothing is compiled (Ubuntu Server documentation, "NVIDIA
//     drivers installation");
//   - the user space of the same branch; all held, with the flavour's
//     kernel meta package (linux-image-<flavour>), so that no upgrade on
//     a node separates the kernel, its modules and their user space (a
//     new kernel or driver is a new image);
//   - NVIDIA's container toolkit from its apt repository, at the
//     version of the GPU Operator's toolkit image, and containerd given
//     the nvidia runtime as its default (nvidia-ctk runtime configure
//     --set-as-default), as the operator's toolkit container sets it up
//     when the operator installs the toolkit; the operator's RuntimeClass
//     "nvidia" names the same handler (NVIDIA Container Toolkit
//     installation guide; GPU Operator, pre-installed drivers and
//     toolkit).
func bakedDriverSteps(d *model.BakedDriver) string {
	if d == nil {
		return ""
	}
	return `
step "GPU host: NVIDIA driver $NVIDIA_MODULES_PACKAGE for the $NVIDIA_KERNEL_FLAVOUR kernel, its user space, the container toolkit"
kernel="$(uname -r)"
case "$kernel" in
*-"$NVIDIA_KERNEL_FLAVOUR") ;;
*) fail "the builder VM runs kernel $kernel, not of the $NVIDIA_KERNEL_FLAVOUR flavour $NVIDIA_MODULES_PACKAGE is built for" ;;
esac
read -r -a user_space <<<"$NVIDIA_USER_SPACE_PACKAGES"
apt-get install -y -q --no-install-recommends "$NVIDIA_MODULES_PACKAGE" "${user_space[@]}"
apt-mark hold "linux-image-$NVIDIA_KERNEL_FLAVOUR" "$NVIDIA_MODULES_PACKAGE" "${user_space[@]}"
curl -fsSL --retry 5 https://nvidia.github.io/libnvidia-container/gpgkey |
	gpg --batch --yes --dearmor -o "$root/etc/apt/keyrings/nvidia-container-toolkit.gpg"
echo "deb [signed-by=/etc/apt/keyrings/nvidia-container-toolkit.gpg] https://nvidia.github.io/libnvidia-container/stable/deb/\$(ARCH) /" >"$root/etc/apt/sources.list.d/nvidia-container-toolkit.list"
apt-get update -q
apt-get install -y -q --no-install-recommends nvidia-container-toolkit="$NVIDIA_CONTAINER_TOOLKIT_VERSION" nvidia-container-toolkit-base="$NVIDIA_CONTAINER_TOOLKIT_VERSION" libnvidia-container-tools="$NVIDIA_CONTAINER_TOOLKIT_VERSION" libnvidia-container1="$NVIDIA_CONTAINER_TOOLKIT_VERSION"
apt-mark hold nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1
nvidia-ctk runtime configure --runtime=containerd --set-as-default --config="$root/etc/containerd/config.toml"
`
}

func kubePackagesPinned() string {
	var out []string
	for _, p := range imageKubernetesPackages {
		out = append(out, p+"=\"$KUBERNETES_PACKAGE_VERSION\"")
	}
	return strings.Join(out, " ")
}

// joinCommands lists the join script's commands in name order.
func joinCommands() string {
	return strings.Join(model.SortedKeys(imageJoinPackages), " ")
}

package gce

// GPUArchitecture is the NVIDIA GPU architecture of an accelerator type
// (its plain type, for a -vws variant), "" for a type nodegen does not
// know. From NVIDIA's product pages of each GPU.
func GPUArchitecture(accelerator string) string {
	if a, ok := Accelerator(accelerator); ok {
		accelerator = a.Base
	}
	return gpuArchitectures[accelerator]
}

var gpuArchitectures = map[string]string{
	"nvidia-tesla-k80":      "Kepler",
	"nvidia-tesla-p4":       "Pascal",
	"nvidia-tesla-p100":     "Pascal",
	"nvidia-tesla-v100":     "Volta",
	"nvidia-tesla-t4":       "Turing",
	"nvidia-tesla-a100":     "Ampere",
	"nvidia-a100-80gb":      "Ampere",
	"nvidia-l4":             "Ada Lovelace",
	"nvidia-h100-80gb":      "Hopper",
	"nvidia-h100-mega-80gb": "Hopper",
	"nvidia-h200-141gb":     "Hopper",
	"nvidia-b200":           "Blackwell",
	"nvidia-gb200":          "Blackwell",
	"nvidia-gb300":          "Blackwell",
	"nvidia-rtx-pro-6000":   "Blackwell",
}

// DriverRefusal says why NVIDIA driver branch (e.g. 580) with open or
// proprietary kernel modules does not drive GPUs of architecture arch,
// "" when it does (or arch is unknown):
//   - Kepler GPUs run with branches up to 470, NVIDIA's legacy branch
//     for them;
//   - Maxwell, Pascal and Volta GPUs run with branches up to 580, the
//     last to support them, and only with the proprietary modules;
//   - Turing, Ampere, Ada Lovelace and Hopper GPUs run with both kinds;
//   - Blackwell GPUs need branch 570 or later (the first with Blackwell
//     support) and the open modules.
//
// Sources: NVIDIA, "NVIDIA Transitions Fully Towards Open-Source GPU
// Kernel Modules" (July 2024: the open modules are not compatible with
// Maxwell, Pascal and Volta; Grace Hopper and Blackwell need them);
// NVIDIA's announcement that the R580 driver is the last branch for
// Maxwell, Pascal and Volta; the R470 legacy branch for Kepler; the R570
// release's Blackwell support.
func DriverRefusal(arch string, branch int, open bool) string {
	switch arch {
	case "Kepler":
		if branch > 470 {
			return "Kepler GPUs run with driver branches up to 470"
		}
		if open {
			return "the open kernel modules drive Turing and newer GPUs only, not Kepler"
		}
	case "Maxwell", "Pascal", "Volta":
		if branch > 580 {
			return arch + " GPUs run with driver branches up to 580, the last to support them"
		}
		if open {
			return "the open kernel modules drive Turing and newer GPUs only, not " + arch + "; use kernelModules: \"proprietary\""
		}
	case "Blackwell":
		if branch < 570 {
			return "Blackwell GPUs need driver branch 570 or later"
		}
		if !open {
			return "Blackwell GPUs run only with the open kernel modules; use kernelModules: \"open\""
		}
	}
	return ""
}

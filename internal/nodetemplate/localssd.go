package nodetemplate

import (
	"fmt"

	"github.com/nodegen/nodegen/internal/model"
)

// localSSDOverheadKiB is the autoscaler's measured filesystem overhead of
// ephemeral storage on N local SSDs, by OS distribution and N
// (cloudprovider/gce/gce_reserved.go,
// ephemeralStorageOnLocalSSDFilesystemOverheadInKiBByOSAndDiskCount).
var localSSDOverheadKiB = map[string]map[int64]int64{
	"cos":    {1: 7289472, 2: 13725224, 3: 20031312, 4: 26332924, 5: 32634536, 6: 38946604, 7: 45254008, 8: 51556096, 16: 52837800, 24: 78686620},
	"ubuntu": {1: 7219840, 2: 13651496, 3: 19953488, 4: 26255100, 5: 32556712, 6: 38860588, 7: 45163896, 8: 51465984, 16: 52747688, 24: 78601704},
}

// LocalSSDEphemeralStorage is the template's ephemeral-storage capacity
// on local SSDs as the autoscaler computes it: an error when the template
// has fewer local SSDs than ephemeral_storage_local_ssd_count (no template
// then), else count × 375 GiB less the overhead measured for the next
// measured disk count (1-8, 16, 24); no overhead for other distributions.
func LocalSSDEphemeralStorage(attached, count int64, distribution string) (int64, error) {
	if attached < count {
		return 0, fmt.Errorf("actual local SSD count is lower than ephemeral_storage_local_ssd_count")
	}
	measured := int64(24)
	switch {
	case count <= 8:
		measured = count
	case count <= 16:
		measured = 16
	}
	storage := count * model.LocalSSDSizeGiB * gib
	return max(storage-localSSDOverheadKiB[distribution][measured]*kib, 0), nil
}

package drift

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/revision"
)

// ManagedInstance is one instance of a MIG as gcloud prints it (`gcloud
// compute instance-groups managed list-instances MIG --zone ZONE
// --format=json`: the Compute API's listManagedInstances entries): the
// instance's URL and the instance template of the version Compute made it
// from.
type ManagedInstance struct {
	Instance string `json:"instance"`
	Version  struct {
		InstanceTemplate string `json:"instanceTemplate"`
	} `json:"version"`
}

// ReadManagedInstances reads that output: a list of managed instances, or
// one.
func ReadManagedInstances(file string, data []byte) ([]ManagedInstance, error) {
	trimmed := bytes.TrimSpace(data)
	var in []ManagedInstance
	var err error
	if len(trimmed) > 0 && trimmed[0] == '[' {
		err = json.Unmarshal(trimmed, &in)
	} else {
		var mi ManagedInstance
		err = json.Unmarshal(trimmed, &mi)
		in = []ManagedInstance{mi}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s", positioned(file, data, err), "not gcloud managed-instance JSON")
	}
	for i, mi := range in {
		if lastSegment(mi.Instance) == "" {
			return nil, fmt.Errorf("%s: item %d: not a managed instance (no instance)", file, i)
		}
	}
	return in, nil
}

// InstanceRevisions gives each managed instance, by name, the revision the
// kube-env of the instance template Compute made it from declares ("" when
// it declares none), for the instances whose template is among tmpls (by
// name). A Node's model.RevisionLabel is only a hint: its kubelet may set
// it to anything.
func InstanceRevisions(mis []ManagedInstance, tmpls []*LiveTemplate) map[string]string {
	byName := map[string]*LiveTemplate{}
	for _, t := range tmpls {
		byName[t.Name] = t
	}
	out := map[string]string{}
	for _, mi := range mis {
		t := byName[lastSegment(mi.Version.InstanceTemplate)]
		if t == nil {
			continue
		}
		rev := ""
		if env, ok := t.Properties.MetadataValue(model.MetadataKubeEnv); ok {
			if r, declared, err := revision.FromKubeEnv([]byte(env)); err == nil && declared {
				rev = r
			}
		}
		out[lastSegment(mi.Instance)] = rev
	}
	return out
}

package model

import "testing"

func TestKubeletSkew(t *testing.T) {
	cp := KubeVersion{1, 35, 2}
	for _, tc := range []struct {
		kubelet KubeVersion
		ok      bool
	}{
		{KubeVersion{1, 35, 0}, true},
		{KubeVersion{1, 35, 9}, true}, // patch versions do not count
		{KubeVersion{1, 32, 0}, true}, // 3 minors older
		{KubeVersion{1, 31, 9}, false},
		{KubeVersion{1, 36, 0}, false},
	} {
		if got := KubeletSkewProblem(tc.kubelet, cp) == ""; got != tc.ok {
			t.Errorf("kubelet %s, control plane %s: allowed %v, want %v (%s)", tc.kubelet, cp, got, tc.ok, KubeletSkewProblem(tc.kubelet, cp))
		}
	}
}

func TestSupportedVersions(t *testing.T) {
	for s, want := range map[string]bool{
		"1.28.4": false, "1.30.14": false, "1.31.0": true, "1.37.2": true, "1.38.0": false, "2.31.0": false,
	} {
		v, err := ParseKubeVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		if v.Supported() != want {
			t.Errorf("%s supported %v, want %v", s, v.Supported(), want)
		}
	}
	for _, bad := range []string{"1.35", "v1.35.2", "1.035.2", "1.35.2.1", "1..2"} {
		if _, err := ParseKubeVersion(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

package scripttest

import (
	"strings"
	"testing"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/model"
)

// KubeletConfig decodes the kubelet patch a startup script writes strictly
// into the kubelet's own v1beta1 KubeletConfiguration.
func KubeletConfig(t testing.TB, script []byte) *kubeletv1beta1.KubeletConfiguration {
	t.Helper()
	open := "<<'" + model.KubeletPatchHeredocDelimiter + "'\n"
	_, rest, ok := strings.Cut(string(script), open)
	if !ok {
		t.Fatal("no kubelet patch heredoc")
	}
	body, _, ok := strings.Cut(rest, "\n"+model.KubeletPatchHeredocDelimiter+"\n")
	if !ok {
		t.Fatal("kubelet patch heredoc not closed")
	}
	var c kubeletv1beta1.KubeletConfiguration
	if err := yaml.UnmarshalStrict([]byte(body), &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

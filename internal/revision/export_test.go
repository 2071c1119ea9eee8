package revision

import (
	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/model"
)

// Set returns data with every revision label's value replaced by rev
// (data itself when every value is rev already): an older revision, or the
// placeholder, put back in the tests.
func Set(data []byte, rev string) []byte { return replaceValues(data, rev) }

// OfTemplate is Of with the group's instance template given as tmpl
// instead of built from the source.
func OfTemplate(src *model.Source, g *model.NodeGroup, tmpl *model.InstanceTemplate, kubeEnv, script []byte) (string, error) {
	env, err := kubeenv.Parse(Empty(kubeEnv))
	if err != nil {
		return "", err
	}
	return digest(src, g, tmpl, env[kubeenv.AutoscalerEnvVars], script, labelRanges(script)), nil
}

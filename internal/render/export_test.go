package render

import (
	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/model"
)

// SetJoinConfigurationFunc replaces the JoinConfiguration builder until
// the returned restore is called: the mutation tests break it on purpose.
func SetJoinConfigurationFunc(f func(*model.Source, *model.NodeGroup) (*kubeadm.JoinConfiguration, error)) (restore func()) {
	old := joinConfigurationFunc
	joinConfigurationFunc = f
	return func() { joinConfigurationFunc = old }
}

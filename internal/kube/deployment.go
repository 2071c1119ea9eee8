package kube

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GetDeployment reads a Deployment
// (GET /apis/apps/v1/namespaces/NS/deployments/NAME).
func (c *Client) GetDeployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error) {
	out := &appsv1.Deployment{}
	err := c.apps.Get().UseProtobufAsDefault().
		Namespace(namespace).
		Resource("deployments").
		Name(name).
		VersionedParams(&metav1.GetOptions{}, c.params).
		Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

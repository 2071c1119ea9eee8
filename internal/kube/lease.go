package kube

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GetLease reads a Lease
// (GET /apis/coordination.k8s.io/v1/namespaces/NS/leases/NAME).
func (c *Client) GetLease(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := c.coordination.Get().UseProtobufAsDefault().
		Namespace(namespace).
		Resource("leases").
		Name(name).
		VersionedParams(&metav1.GetOptions{}, c.params).
		Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CreateLease creates a Lease in its namespace
// (POST /apis/coordination.k8s.io/v1/namespaces/NS/leases); one of the
// same name makes it fail with 409 (apierrors.IsAlreadyExists).
func (c *Client) CreateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := c.coordination.Post().UseProtobufAsDefault().
		Namespace(lease.Namespace).
		Resource("leases").
		VersionedParams(&metav1.CreateOptions{}, c.params).
		Body(lease).
		Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateLease replaces a Lease
// (PUT /apis/coordination.k8s.io/v1/namespaces/NS/leases/NAME). With the
// resourceVersion of the Lease as it was read, a Lease changed since
// makes it fail with 409 (apierrors.IsConflict).
func (c *Client) UpdateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := c.coordination.Put().UseProtobufAsDefault().
		Namespace(lease.Namespace).
		Resource("leases").
		Name(lease.Name).
		VersionedParams(&metav1.UpdateOptions{}, c.params).
		Body(lease).
		Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

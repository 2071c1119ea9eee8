package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ListPersistentVolumeClaims lists the PersistentVolumeClaims of a
// namespace, or of all with metav1.NamespaceAll
// (GET /api/v1/[namespaces/NS/]persistentvolumeclaims).
func (c *Client) ListPersistentVolumeClaims(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.PersistentVolumeClaimList, error) {
	out := &corev1.PersistentVolumeClaimList{}
	if err := c.list(ctx, c.core, namespace, "persistentvolumeclaims", opts, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ListPersistentVolumes lists the PersistentVolumes
// (GET /api/v1/persistentvolumes).
func (c *Client) ListPersistentVolumes(ctx context.Context, opts metav1.ListOptions) (*corev1.PersistentVolumeList, error) {
	out := &corev1.PersistentVolumeList{}
	if err := c.list(ctx, c.core, "", "persistentvolumes", opts, out); err != nil {
		return nil, err
	}
	return out, nil
}

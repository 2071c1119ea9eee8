package model

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Roles, by the name of the service account they identify (the Terraform
// name of its google_service_account and the prefix of its variable).
const (
	RoleNodes      = "nodes"
	RoleAutoscaler = "autoscaler"
)

// ServiceAccountID is the account_id of a role's service account:
// "<cluster>-<role>", at most 30 characters; a longer cluster name is cut
// and followed by a hash of the whole name, so two clusters never share an
// ID.
func ServiceAccountID(cluster, role string) string {
	id := cluster + "-" + role
	if len(id) <= 30 {
		return id
	}
	sum := sha256.Sum256([]byte(cluster))
	h := hex.EncodeToString(sum[:])[:6]
	keep := strings.TrimRight(cluster[:30-len(role)-len(h)-2], "-")
	return keep + "-" + h + "-" + role
}

// RoleOf returns the role of a cloud group's VMs.
func RoleOf(src *Source, g *NodeGroup) string {
	if g.Name == src.Cluster.Autoscaler.NodeGroup {
		return RoleAutoscaler
	}
	return RoleNodes
}

package validate

import (
	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/source"
)

// A secretUse is one role a Secret Manager secret of the source plays.
type secretUse struct {
	pos           Positioner
	cluster, name string
	path          []cue.Selector
	role          string // secretRoleJoin or secretRolePSK
}

const (
	secretRoleJoin = "the join token's secret"
	secretRolePSK  = "a VPN tunnel's pre-shared key"
)

// secretUses lists the Secret Manager secrets a cluster names, by project
// and secret name.
func secretUses(src *model.Source, pos Positioner, uses map[string][]secretUse) {
	cl := &src.Cluster
	key := func(name string) string { return cl.GCP.Project + "\x00" + name }
	if sm := cl.JoinToken.SecretManager; sm != nil {
		uses[key(sm.Secret)] = append(uses[key(sm.Secret)], secretUse{pos, cl.Name, sm.Secret, sel("cluster", "joinToken", "secretManager", "secret"), secretRoleJoin})
	}
	if n := cl.GCP.Network; n != nil && n.VPN != nil {
		for i, t := range n.VPN.Tunnels {
			s := t.SharedSecret.Secret
			uses[key(s)] = append(uses[key(s)], secretUse{pos, cl.Name, s, sel("cluster", "gcp", "network", "vpn", "tunnels", i, "sharedSecret", "secret"), secretRolePSK})
		}
	}
}

// secretRoles reports a Secret Manager secret that plays two roles: a
// tunnel's pre-shared key that is also a join token's secret (of this
// cluster or of another cluster of the fleet in the same project). The
// rendered Terraform grants every cloud node roles/secretmanager.secretAccessor
// on the join token's secret (internal/render/terraform/terraform_iam.go),
// so every node could read the VPN's key, and the token renewer adds a
// new version to it on every renewal (templates/join-token-renewer.sh),
// so the key's secret would hold join tokens as its newer versions. Two tunnels sharing one key is one role, and allowed. With
// across, only the uses in two different clusters are reported (each
// cluster's own check reports its own).
func secretRoles(members []secretMember, across bool) diag.List {
	uses := map[string][]secretUse{}
	for _, m := range members {
		secretUses(m.src, m.pos, uses)
	}
	var list diag.List
	for _, k := range model.SortedKeys(uses) {
		us := uses[k]
		var join *secretUse
		for i := range us {
			if us[i].role == secretRoleJoin {
				join = &us[i]
				break
			}
		}
		if join == nil {
			continue
		}
		for _, u := range us {
			if u.role != secretRolePSK || across == (u.cluster == join.cluster) {
				continue
			}
			where := "this cluster's"
			if u.cluster != join.cluster {
				where = "cluster " + join.cluster + "'s"
			}
			c := &checker{pos: u.pos}
			c.at(u.path, "secret %q is also %s join token's secret: every cloud node may read that secret (roles/secretmanager.secretAccessor) and the token renewer adds a version to it on every renewal, so every node could read the tunnel's key, and the renewer would write join tokens as new versions of it (a rotation would pin one as the key); give the pre-shared key a secret of its own", u.name, where)
			list = append(list, c.list...)
		}
	}
	return list
}

// A secretMember is a cluster whose secrets secretRoles compares.
type secretMember struct {
	src *model.Source
	pos Positioner
}

// fleetSecretMembers are the clusters of l whose cluster field decoded.
func fleetSecretMembers(l *source.Loaded) []secretMember {
	var out []secretMember
	for _, m := range l.Members {
		if !m.Broken.All && !m.Broken.Cluster {
			out = append(out, secretMember{m.Source, m})
		}
	}
	return out
}

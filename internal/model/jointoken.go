package model

import (
	"fmt"
	"strings"
	"time"
)

// JoinTokenMargin is what the join token's lifetime must leave beyond
// renewal period and provisioning time: the CronJob's start delay and run
// time, the VM's boot before the startup script runs, clock skew.
const JoinTokenMargin = 30 * time.Minute

// HasJoinTokenRenewer reports whether the cluster gets the join-token
// renewer: only a token in Secret Manager is renewed.
func (c *Cluster) HasJoinTokenRenewer() bool { return c.JoinToken.SecretManager != nil }

// HasNodeCSRApprover reports whether the cluster gets the node CSR
// approver: every cluster does. Every cloud join token, the renewer's or
// one an admin sets in project metadata, is in the cloud join group
// (CloudBootstrapGroup), which kubeadm's auto-approval does not cover, so
// the approver decides the cloud nodes' CSRs; it also gives them the
// verified group label (VerifiedGroupLabel) that nodegen's placements and
// policies select on.
func (c *Cluster) HasNodeCSRApprover() bool { return true }

// KubeletKeyAttribute is the guest attribute (namespace/key) in which a
// cloud VM publishes "<instance id> sha256:<hex>", the SHA-256 of the
// SubjectPublicKeyInfo of the key its kubelet's TLS bootstrap signs its
// CSR with; the node CSR approver approves only a CSR of that key.
const KubeletKeyAttribute = "nodegen/kubelet-client-key"

// BindsKubeletKey reports whether the cloud VMs publish their kubelet's
// bootstrap key (KubeletKeyAttribute) and the approver requires it: in
// every cluster, since the approver decides every cloud node's CSR, with
// a token in Secret Manager or in project metadata alike.
func (c *Cluster) BindsKubeletKey() bool { return true }

// Renewal is how the join-token renewer keeps the token fresh.
type Renewal struct {
	TTL    time.Duration // lifetime of each token
	Period time.Duration // time between renewals
	// Provision is the longest effective maxNodeProvisionTime of any cloud
	// group, and ProvisionGroup that group ("" when no cloud group exists).
	Provision      time.Duration
	ProvisionGroup string
}

// Grace is how long a superseded token stays valid: a VM may have read it
// just before it was superseded and take Provision to join.
func (r Renewal) Grace() time.Duration { return r.Provision + JoinTokenMargin }

// MinTTL is the shortest TTL that keeps every VM's token valid until it
// has joined: the token read just before a renewal is Period old then.
func (r Renewal) MinTTL() time.Duration { return r.Period + r.Grace() }

// Renewal is the join token's TTL and period and the longest
// maxNodeProvisionTime of the cloud groups (a group's override, or the
// cluster's default).
func (s *Source) Renewal() Renewal {
	jt := s.Cluster.JoinToken
	r := Renewal{TTL: jt.TTL.Duration(), Period: jt.RenewEvery.Duration()}
	for _, g := range s.CloudGroups() {
		v := g.Autoscaling.MaxNodeProvisionTime
		if v.IsZero() {
			v = s.Cluster.Autoscaler.MaxNodeProvisionTime
		}
		if d := v.Duration(); d > r.Provision {
			r.Provision, r.ProvisionGroup = d, g.Name
		}
	}
	return r
}

// CronSchedule returns the cron schedule (UTC) that runs every period:
// period must divide an hour or a day into whole minutes or hours.
func CronSchedule(period time.Duration) (string, error) {
	if period <= 0 || period%time.Minute != 0 {
		return "", fmt.Errorf("not a whole number of minutes")
	}
	m := int(period / time.Minute)
	switch {
	case m == 1:
		return "* * * * *", nil
	case m < 60 && 60%m == 0:
		return fmt.Sprintf("*/%d * * * *", m), nil
	case m == 24*60:
		return "0 0 * * *", nil
	case m%60 == 0 && (24*60)%m == 0:
		return fmt.Sprintf("0 */%d * * *", m/60), nil
	}
	return "", fmt.Errorf("does not divide an hour or a day evenly")
}

// FormatDuration prints d as a Go duration without zero trailing units
// ("26h30m", not "26h30m0s").
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

package terraform

// MIG update policy values: the MIG never acts on its running VMs for a
// new template. OPPORTUNISTIC starts no update itself; minimal and most
// disruptive action NONE keep even an update triggered by another call
// (google provider v7.45.0, google_compute_instance_group_manager
// update_policy: "If the Updater determines that the minimal update action
// needed is more disruptive than most disruptive allowed action you specify
// it will not perform the update at all") from restarting or replacing one.
// New VMs (a resize, createInstances) are made from the new template, and
// nodegen rollout replaces the old ones with a drain first.
const (
	updatePolicyType   = "OPPORTUNISTIC"
	updatePolicyAction = "NONE"
)

// updatePolicy writes a MIG's update_policy block.
func updatePolicy(w *hclText) {
	w.comment("A new template applies to new VMs only: the MIG never restarts or",
		"replaces a running node for it, which would not drain it. nodegen",
		"rollout replaces the old nodes: a new VM first, then drain, then delete.")
	w.open("update_policy")
	w.attr("type", hclString(updatePolicyType))
	w.attr("minimal_action", hclString(updatePolicyAction))
	w.attr("most_disruptive_allowed_action", hclString(updatePolicyAction))
	w.close()
}

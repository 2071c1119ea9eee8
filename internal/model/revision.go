package model

// RevisionLabel is the label every cloud node joins with, and its group's
// kube-env declares: the revision of the artifacts the node was made from
// (package revision). The kubelet may set it on itself: it lies outside the
// kubernetes.io and k8s.io namespaces, which are all NodeRestriction and
// the kubelet's --node-labels check restrict (kubernetes/kubernetes v1.37.2,
// plugin/pkg/admission/noderestriction/admission.go getForbiddenLabels;
// cmd/kubelet/app/options/options.go ValidateKubeletFlags). It is never a
// selector: nodegen selects a group's nodes by GroupLabel alone.
const RevisionLabel = "nodegen.dev/revision"

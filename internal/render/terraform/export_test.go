package terraform

// The module's names the tests of package terraform_test, which render
// whole sources through package render, find its resources, variables and
// outputs by.
const (
	JoinSecretReader        = joinSecretReader
	MeshLBHealthFirewall    = meshLBHealthFirewall
	MeshLBName              = meshLBTFName
	TFApproverMIGRole       = tfApproverMIGRole
	TFAutoscalerListRole    = tfAutoscalerListRole
	TFJoinSecretName        = tfJoinSecretName
	TFJoinSecretRenewerRole = tfJoinSecretRenewerRole
)

var (
	CustomRoleID           = autoscalerRoleID
	CustomRoleIDFor        = customRoleIDFor
	JoinSecretGrants       = joinSecretGrants
	ServiceAccountLocal    = serviceAccountLocal
	ServiceAccountVariable = serviceAccountVariable
	TFName                 = terraformName
)

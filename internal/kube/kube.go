// Package kube is nodegen's client of a cluster's API: the calls rollout
// and drift make (nodes, pods, evictions, PodDisruptionBudgets, the
// rollout's Lease, the autoscaler's Deployment) and no more. It stands on
// client-go's REST client (k8s.io/client-go/rest) with a scheme of
// core/v1, policy/v1, coordination.k8s.io/v1 and apps/v1 alone, so that the binary links
// neither client-go's typed clientset nor the types of the other API
// groups it would register.
//
// Each call sends the request client-go's typed client sends for it
// (k8s.io/client-go v0.37.2, gentype/type.go and
// kubernetes/typed/core/v1/pod_expansion.go): the same verb, path, query,
// body, content types (protobuf preferred where the typed client prefers
// it) and user agent. Errors are client-go's: an API error is a
// *apierrors.StatusError, so apierrors.IsNotFound, IsTooManyRequests and
// the like hold as before.
package kube

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/homedir"
)

// codecs is the scheme of the client's types with its serializers and the
// parameter codec of its options.
type codecs struct {
	scheme  *runtime.Scheme
	factory serializer.CodecFactory
	params  runtime.ParameterCodec
}

// theCodecs are built on first use: commands that never talk to a cluster
// do not pay for them.
var theCodecs = sync.OnceValue(func() *codecs {
	s := runtime.NewScheme()
	// The options and status types of meta/v1, as the typed clientset's
	// scheme registers them (k8s.io/client-go/kubernetes/scheme).
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(policyv1.AddToScheme(s))
	utilruntime.Must(coordinationv1.AddToScheme(s))
	utilruntime.Must(appsv1.AddToScheme(s))
	return &codecs{scheme: s, factory: serializer.NewCodecFactory(s), params: runtime.NewParameterCodec(s)}
})

// Client calls a cluster's API: core/v1, policy/v1,
// coordination.k8s.io/v1 and apps/v1.
type Client struct {
	core, policy, coordination, apps *rest.RESTClient
	params                           runtime.ParameterCodec
}

// FromKubeconfig makes the client of the cluster of a kubeconfig file (its
// current context), as clientcmd.BuildConfigFromFlags reads it.
func FromKubeconfig(path string) (*Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	return NewForConfig(cfg)
}

// KubeconfigEnv is the variable kubectl reads its kubeconfig files from
// when no --kubeconfig flag is given: a list of files separated by the
// platform's list separator (":"; ";" on Windows), merged.
const KubeconfigEnv = clientcmd.RecommendedConfigPathEnvVar

// FromKubeconfigEnv makes the client of the cluster of the kubeconfig files
// $KUBECONFIG names (without it, of ~/.kube/config), read and merged as
// kubectl reads them
// (clientcmd.NewDefaultClientConfigLoadingRules: the first file that sets a
// value wins, current-context included; k8s.io/client-go, tools/clientcmd/
// loader.go), with the current context.
func FromKubeconfigEnv() (*Client, error) {
	cfg, err := ConfigFromKubeconfigEnv()
	if err != nil {
		return nil, err
	}
	return NewForConfig(cfg)
}

// ConfigFromKubeconfigEnv is FromKubeconfigEnv's REST config. Without
// $KUBECONFIG, it is ~/.kube/config's (HomeKubeconfig), as kubectl's.
func ConfigFromKubeconfigEnv() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if os.Getenv(KubeconfigEnv) == "" {
		// The rules' default, clientcmd.RecommendedHomeFile, is the home
		// directory's when the process started; this is $HOME's now.
		rules.Precedence = []string{HomeKubeconfig()}
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
}

// HomeKubeconfigName is how HomeKubeconfig is named to a person.
const HomeKubeconfigName = "~/.kube/config"

// HomeKubeconfig is the kubeconfig file kubectl reads without
// $KUBECONFIG: .kube/config in the home directory
// (clientcmd.RecommendedHomeFile, of homedir.HomeDir).
func HomeKubeconfig() string {
	return filepath.Join(homedir.HomeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)
}

// NewForConfig makes a client from a REST config, with the defaults the
// typed clientset applies (k8s.io/client-go/kubernetes.NewForConfig): the
// default Kubernetes user agent unless the config sets one, one HTTP
// client for every API group, and a rate limiter shared by all when the
// config sets a QPS but no limiter (each group its own default otherwise).
func NewForConfig(c *rest.Config) (*Client, error) {
	config := *c
	if config.UserAgent == "" {
		config.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	httpClient, err := rest.HTTPClientFor(&config)
	if err != nil {
		return nil, err
	}
	if config.RateLimiter == nil && config.QPS > 0 {
		if config.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		config.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(config.QPS, config.Burst)
	}
	cs := theCodecs()
	core, err := restClient(&config, httpClient, cs, corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	policy, err := restClient(&config, httpClient, cs, policyv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	coordination, err := restClient(&config, httpClient, cs, coordinationv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	apps, err := restClient(&config, httpClient, cs, appsv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	return &Client{core: core, policy: policy, coordination: coordination, apps: apps, params: cs.params}, nil
}

// restClient is the REST client of one API group version, configured as
// the typed client of that group configures its own (setConfigDefaults).
func restClient(c *rest.Config, h *http.Client, cs *codecs, gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
	config := *c
	config.GroupVersion = &gv
	config.APIPath = apiPath
	config.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(cs.scheme, cs.factory).WithoutConversion()
	return rest.RESTClientForConfigAndClient(&config, h)
}

// listTimeout is the client-side timeout of a list: its TimeoutSeconds.
func listTimeout(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}

// list sends a list request of resource in namespace ("" for a resource
// without one, metav1.NamespaceAll for all) to one group's client and
// decodes the answer into out.
func (c *Client) list(ctx context.Context, rc *rest.RESTClient, namespace, resource string, opts metav1.ListOptions, out runtime.Object) error {
	return rc.Get().UseProtobufAsDefault().
		NamespaceIfScoped(namespace, namespace != "").
		Resource(resource).
		VersionedParams(&opts, c.params).
		Timeout(listTimeout(opts)).
		Do(ctx).Into(out)
}

// ListNodes lists the nodes (GET /api/v1/nodes).
func (c *Client) ListNodes(ctx context.Context, opts metav1.ListOptions) (*corev1.NodeList, error) {
	out := &corev1.NodeList{}
	if err := c.list(ctx, c.core, "", "nodes", opts, out); err != nil {
		return nil, err
	}
	return out, nil
}

// GetNode reads a node (GET /api/v1/nodes/NAME).
func (c *Client) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	out := &corev1.Node{}
	err := c.core.Get().UseProtobufAsDefault().
		Resource("nodes").
		Name(name).
		VersionedParams(&metav1.GetOptions{}, c.params).
		Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// MergePatchNode applies a JSON merge patch (RFC 7386) to a node
// (PATCH /api/v1/nodes/NAME, application/merge-patch+json) and returns
// the node the server made of it.
func (c *Client) MergePatchNode(ctx context.Context, name string, patch []byte) (*corev1.Node, error) {
	out := &corev1.Node{}
	err := c.core.Patch(types.MergePatchType).UseProtobufAsDefault().
		Resource("nodes").
		Name(name).
		VersionedParams(&metav1.PatchOptions{}, c.params).
		Body(patch).
		Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteNode deletes a node (DELETE /api/v1/nodes/NAME, with empty
// DeleteOptions as the body).
func (c *Client) DeleteNode(ctx context.Context, name string) error {
	return c.core.Delete().UseProtobufAsDefault().
		Resource("nodes").
		Name(name).
		Body(&metav1.DeleteOptions{}).
		Do(ctx).Error()
}

// DeletePod deletes a pod gracefully, with the pod's own grace period,
// on the condition that it is still the pod of that uid
// (DELETE /api/v1/namespaces/NS/pods/NAME, DeleteOptions with a UID
// precondition as the body).
func (c *Client) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	return c.core.Delete().UseProtobufAsDefault().
		Namespace(namespace).
		Resource("pods").
		Name(name).
		Body(&metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}).
		Do(ctx).Error()
}

// ListPods lists the pods of a namespace, or of all with
// metav1.NamespaceAll (GET /api/v1/[namespaces/NS/]pods).
func (c *Client) ListPods(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.PodList, error) {
	out := &corev1.PodList{}
	if err := c.list(ctx, c.core, namespace, "pods", opts, out); err != nil {
		return nil, err
	}
	return out, nil
}

// EvictPod asks the Eviction API to evict the pod the eviction names
// (POST /api/v1/namespaces/NS/pods/NAME/eviction, a policy/v1 Eviction
// in JSON). A PodDisruptionBudget that forbids it now makes it fail with
// 429 Too Many Requests (apierrors.IsTooManyRequests).
func (c *Client) EvictPod(ctx context.Context, eviction *policyv1.Eviction) error {
	return c.core.Post().
		Namespace(eviction.Namespace).
		Resource("pods").
		Name(eviction.Name).
		SubResource("eviction").
		Body(eviction).
		Do(ctx).Error()
}

// ListPodDisruptionBudgets lists the PodDisruptionBudgets of a namespace,
// or of all with metav1.NamespaceAll
// (GET /apis/policy/v1/[namespaces/NS/]poddisruptionbudgets).
func (c *Client) ListPodDisruptionBudgets(ctx context.Context, namespace string, opts metav1.ListOptions) (*policyv1.PodDisruptionBudgetList, error) {
	out := &policyv1.PodDisruptionBudgetList{}
	if err := c.list(ctx, c.policy, namespace, "poddisruptionbudgets", opts, out); err != nil {
		return nil, err
	}
	return out, nil
}

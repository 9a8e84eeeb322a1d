package v1alpha1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// DefaultWebhookScope is the pod webhook's namespace scope when the KubeNexusConfig
// sets none or sets one that cannot be used: the namespaces labelled
// kubenexus.io/enabled=true, which is also the static scope of the webhook
// configuration the chart installs.
func DefaultWebhookScope() labels.Selector {
	return labels.SelectorFromSet(labels.Set{LabelNamespaceEnabled: "true"})
}

// NamespaceScope converts spec.webhook.namespaceSelector into the selector the pod
// webhook matches namespaces with (DefaultWebhookScope when unset). The webhook and
// KubeNexusConfig admission both use it, so a selector admission accepts is one the
// webhook can use.
func (w *WebhookSpec) NamespaceScope() (labels.Selector, error) {
	if w.NamespaceSelector == nil {
		return DefaultWebhookScope(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
	if err != nil {
		return nil, fmt.Errorf("spec.webhook.namespaceSelector: %w", err)
	}
	return sel, nil
}

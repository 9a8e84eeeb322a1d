package demo

import (
	"bytes"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// AnnotationNodeDown on a kwok node stops kwok's node stages for it (initialise,
// heartbeat): the Ready condition it is given stays, as a kubelet's report would.
const AnnotationNodeDown = "e2e.kubenexus.io/node-down"

// nodeDownStage matches a node that carries AnnotationNodeDown and does nothing.
// It is there to be matched: kwok schedules a node's next stage when the node
// changes, and a node that matches no stage keeps the job scheduled before — a
// heartbeat due up to 45 s later, rendered from the node as it was then, which
// reported the node Ready again in the middle of a test (the restart scenario
// of test/e2e/chaos placed a new generation on the "NotReady" node). A match
// replaces that job with this empty one.
var nodeDownStage = fmt.Sprintf(`apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-down
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: .metadata.annotations[%q]
      operator: Exists
  next: {}
`, AnnotationNodeDown)

// withNodeDownSwitch adds to kwok's node stages the condition that the node does
// not carry AnnotationNodeDown, and the stage that a node carrying it matches.
func withNodeDownSwitch(stages []byte) ([]byte, error) {
	var out bytes.Buffer
	for _, doc := range bytes.Split(stages, []byte("\n---\n")) {
		doc = bytes.TrimPrefix(bytes.TrimSpace(doc), []byte("---\n"))
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var stage map[string]any
		if err := yaml.Unmarshal(doc, &stage); err != nil {
			return nil, fmt.Errorf("kwok stages: %w", err)
		}
		spec, _ := stage["spec"].(map[string]any)
		ref, _ := spec["resourceRef"].(map[string]any)
		if ref["kind"] == "Node" {
			sel, _ := spec["selector"].(map[string]any)
			if sel == nil {
				sel = map[string]any{}
				spec["selector"] = sel
			}
			exprs, _ := sel["matchExpressions"].([]any)
			sel["matchExpressions"] = append(exprs, map[string]any{
				"key": fmt.Sprintf(".metadata.annotations[%q]", AnnotationNodeDown), "operator": "DoesNotExist"})
			var err error
			if doc, err = yaml.Marshal(stage); err != nil {
				return nil, err
			}
		}
		out.WriteString("---\n")
		out.Write(doc)
		out.WriteString("\n")
	}
	out.WriteString("---\n" + nodeDownStage)
	return out.Bytes(), nil
}

// SetNodeReady makes a kwok node report NotReady, as a kubelet whose container
// runtime is down does (ready false), or lets kwok report it Ready again, and
// waits until kube-controller-manager's node lifecycle controller has acted on it:
// the node tainted not-ready NoExecute, or no not-ready taint left. The cluster
// must run with Options.NodeLifecycle.
func (c *Cluster) SetNodeReady(ctx context.Context, name string, ready bool) error {
	node := &corev1.Node{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return err
	}
	patch := client.MergeFrom(node.DeepCopy())
	if ready {
		delete(node.Annotations, AnnotationNodeDown)
	} else {
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		node.Annotations[AnnotationNodeDown] = "true"
	}
	if err := c.Client.Patch(ctx, node, patch); err != nil {
		return err
	}
	return waitFor(ctx, 2*time.Minute, func() error {
		if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			return err
		}
		tainted := false
		for _, t := range node.Spec.Taints {
			if t.Key == corev1.TaintNodeNotReady && t.Effect == corev1.TaintEffectNoExecute {
				tainted = true
			}
		}
		if ready {
			if tainted {
				return fmt.Errorf("node %s: still tainted %s", name, corev1.TaintNodeNotReady)
			}
			return nil
		}
		if tainted {
			return nil
		}
		// (Re)write the report: a heartbeat kwok had under way may have
		// overwritten it.
		if notReady(node) {
			return fmt.Errorf("node %s: NotReady, not tainted yet", name)
		}
		before := node.DeepCopy()
		now := metav1.Now()
		for i := range node.Status.Conditions {
			if cond := &node.Status.Conditions[i]; cond.Type == corev1.NodeReady {
				cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, "KubeletNotReady", "container runtime is down (e2e)"
				cond.LastHeartbeatTime, cond.LastTransitionTime = now, now
			}
		}
		if err := c.Client.Status().Patch(ctx, node, client.MergeFrom(before)); err != nil {
			return err
		}
		return fmt.Errorf("node %s: reported NotReady", name)
	})
}

func notReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status != corev1.ConditionTrue
		}
	}
	return false
}

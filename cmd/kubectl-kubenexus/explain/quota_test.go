package explain

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/controllers/feasibility"
)

func TestQuotaFit(t *testing.T) {
	// A queue whose GPU group has two flavors, a100 (64, 56 reserved) then h100 (32,
	// none reserved), and whose CPU group one.
	quota := func(name string, nominal string) kueue.ResourceQuota {
		return kueue.ResourceQuota{Name: corev1.ResourceName(name), NominalQuota: resource.MustParse(nominal)}
	}
	usage := func(name, total string) kueue.ResourceUsage {
		return kueue.ResourceUsage{Name: corev1.ResourceName(name), Total: resource.MustParse(total)}
	}
	cq := &kueue.ClusterQueue{
		Spec: kueue.ClusterQueueSpec{ResourceGroups: []kueue.ResourceGroup{
			{CoveredResources: []corev1.ResourceName{"nvidia.com/gpu"}, Flavors: []kueue.FlavorQuotas{
				{Name: "a100", Resources: []kueue.ResourceQuota{quota("nvidia.com/gpu", "64")}},
				{Name: "h100", Resources: []kueue.ResourceQuota{quota("nvidia.com/gpu", "32")}}}},
			{CoveredResources: []corev1.ResourceName{"cpu", "memory"}, Flavors: []kueue.FlavorQuotas{
				{Name: "default", Resources: []kueue.ResourceQuota{quota("cpu", "256"), quota("memory", "1Ti")}}}},
		}},
		Status: kueue.ClusterQueueStatus{FlavorsReservation: []kueue.FlavorUsage{
			{Name: "a100", Resources: []kueue.ResourceUsage{usage("nvidia.com/gpu", "56")}},
			{Name: "default", Resources: []kueue.ResourceUsage{usage("cpu", "200"), usage("memory", "100Gi")}}}},
	}
	job := func(pods int, gpus, cpus string, extra ...string) []feasibility.PodSet {
		rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpus)}
		if gpus != "" {
			rl["nvidia.com/gpu"] = resource.MustParse(gpus)
		}
		for i := 0; i+1 < len(extra); i += 2 {
			rl[corev1.ResourceName(extra[i])] = resource.MustParse(extra[i+1])
		}
		return []feasibility.PodSet{{Name: "main", Count: pods, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl}}}}}}}
	}
	for _, tc := range []struct {
		name    string
		sets    []feasibility.PodSet
		flavors []string
		short   string
	}{
		{"a100 holds 8 GPUs", job(1, "8", "8"), []string{"a100", "default"}, ""},
		{"16 GPUs: past a100's 8 free, h100 holds them", job(2, "8", "8"), []string{"h100", "default"}, ""},
		{"40 GPUs: no flavor has them", job(5, "8", "8"), nil, "nvidia.com/gpu: 40 needed, 32 free in flavor h100 (nominal 32, reserved 0)"},
		{"CPU quota short", job(8, "1", "8"), nil, "cpu: 64 needed, 56 free in flavor default (nominal 256, reserved 200)"},
		{"a resource no group covers", job(1, "", "1", "example.com/fpga", "1"), nil, "no resource group covers example.com/fpga, which the job asks for"},
		{"CPU only", job(4, "", "4"), []string{"default"}, ""},
	} {
		flavors, short := quotaFit(cq, feasibility.QuotaNeed(tc.sets))
		if short != tc.short || len(flavors) != len(tc.flavors) || (len(flavors) > 0 && flavors[0] != tc.flavors[0]) {
			t.Errorf("%s: flavors %v, short %q; want %v, %q", tc.name, flavors, short, tc.flavors, tc.short)
		}
	}
}

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
)

// SchedulerSpec is the scheduler deployment.
//
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || self.replicas <= 1 || !has(self.leaderElection) || !has(self.leaderElection.enabled) || self.leaderElection.enabled",message="spec.scheduler.replicas greater than 1 requires spec.scheduler.leaderElection.enabled=true"
type SchedulerSpec struct {
	// schedulerName is the name pods put in spec.schedulerName to use KubeNexus,
	// and the name of the scheduler profile.
	// +kubebuilder:default=kubenexus-scheduler
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`

	// image is the kubenexus-scheduler container image. Unset means the image the
	// operator was installed with.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s]+$`
	// +optional
	Image string `json:"image,omitempty"`

	// imagePullPolicy is the pull policy of the scheduler container.
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +kubebuilder:default=IfNotPresent
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// replicas is the number of scheduler pods; more than one requires leader election.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	// +kubebuilder:default=1
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// leaderElection configures the scheduler's leader election.
	// +kubebuilder:default={}
	// +optional
	LeaderElection LeaderElectionSpec `json:"leaderElection,omitempty"`

	// resources are the scheduler container's resource requests and limits.
	// +kubebuilder:default={requests: {cpu: "500m", memory: "512Mi"}}
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// clientConnection is the scheduler's API client rate limit.
	// +kubebuilder:default={}
	// +optional
	ClientConnection ClientConnectionSpec `json:"clientConnection,omitempty"`

	// percentageOfNodesToScore is the share of feasible nodes the scheduler scores
	// per pod; 0 means kube-scheduler's adaptive default.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=0
	// +optional
	PercentageOfNodesToScore int32 `json:"percentageOfNodesToScore,omitempty"`

	// verbosity is the scheduler's log level (klog -v).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +kubebuilder:default=2
	// +optional
	Verbosity int32 `json:"verbosity,omitempty"`

	// imagePullSecrets are the Secrets (in the operator's namespace) the scheduler's
	// pods pull their image with.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// nodeSelector limits the scheduler's pods to nodes with these labels.
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations of the scheduler's pods.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// affinity of the scheduler's pods. With more than one replica and no
	// podAntiAffinity given, the replicas prefer different nodes.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// priorityClassName of the scheduler's pods (e.g. system-cluster-critical, so
	// that the scheduler is not evicted before the pods it places).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// servingCertSecretName names a Secret of type kubernetes.io/tls, in the
	// manager's namespace, whose tls.crt and tls.key the scheduler serves on its
	// secure port (metrics, health) instead of the self-signed certificate
	// kube-scheduler generates, so that scrapers can verify it (the chart sets
	// it to the Secret cert-manager issues in cert-manager mode). The scheduler's
	// pods do not start until the Secret exists.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ServingCertSecretName string `json:"servingCertSecretName,omitempty"`
}

// LeaderElectionSpec configures leader election between scheduler replicas.
//
// +kubebuilder:validation:XValidation:rule="!has(self.renewDeadlineSeconds) || !has(self.leaseDurationSeconds) || self.renewDeadlineSeconds < self.leaseDurationSeconds",message="spec.scheduler.leaderElection.renewDeadlineSeconds must be less than leaseDurationSeconds"
// +kubebuilder:validation:XValidation:rule="!has(self.retryPeriodSeconds) || !has(self.renewDeadlineSeconds) || self.retryPeriodSeconds < self.renewDeadlineSeconds",message="spec.scheduler.leaderElection.retryPeriodSeconds must be less than renewDeadlineSeconds"
type LeaderElectionSpec struct {
	// enabled turns leader election on.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// leaseDurationSeconds is how long a non-leader waits before taking over.
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=300
	// +kubebuilder:default=15
	// +optional
	LeaseDurationSeconds int32 `json:"leaseDurationSeconds,omitempty"`

	// renewDeadlineSeconds is how long the leader retries renewing before giving up.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=300
	// +kubebuilder:default=10
	// +optional
	RenewDeadlineSeconds int32 `json:"renewDeadlineSeconds,omitempty"`

	// retryPeriodSeconds is the wait between leader election attempts.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=300
	// +kubebuilder:default=2
	// +optional
	RetryPeriodSeconds int32 `json:"retryPeriodSeconds,omitempty"`
}

// ClientConnectionSpec is the scheduler's API client rate limit.
//
// +kubebuilder:validation:XValidation:rule="!has(self.burst) || !has(self.qps) || self.burst >= self.qps",message="spec.scheduler.clientConnection.burst must be greater than or equal to qps"
type ClientConnectionSpec struct {
	// qps is the sustained request rate to the API server.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +kubebuilder:default=50
	// +optional
	QPS int32 `json:"qps,omitempty"`

	// burst is the short-term request allowance above qps.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20000
	// +kubebuilder:default=100
	// +optional
	Burst int32 `json:"burst,omitempty"`
}

# KubeNexus — kubebuilder-style targets. Every tool is built from source into bin/
# by hack/build-tools.sh (pinned in hack/tools/go.mod); nothing is downloaded prebuilt.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

ROOT := $(shell pwd)
BIN := $(ROOT)/bin
TOOLS_BIN := $(BIN)/k8s
CONTROLLER_GEN := $(TOOLS_BIN)/controller-gen
# envtest finds etcd and kube-apiserver here.
export KUBEBUILDER_ASSETS := $(TOOLS_BIN)
# envtest's API server gets a minute to start (its default, 20 s, is too short on a
# loaded 2-core machine, where it was seen to time out).
export KUBEBUILDER_CONTROLPLANE_START_TIMEOUT ?= 60s

GO_TEST_FLAGS ?=
# make test builds every test with the settings of the binaries (STATIC, STATIC_FLAGS),
# so that its packages come from the build cache the binaries and the tools filled:
# under the race detector every package would be compiled a second time (on a fresh
# 2-core machine about 450 s of the 2472 s a cold make test took at 8dffb92). make
# test-race runs the unit tests and the envtest suites (the scheduler and the manager
# in-process) under it. go test's own vet is off: make verify vets and lints (CI runs
# it before make test).
TEST_FLAGS = $(STATIC_FLAGS) -vet=off
# The e2e runs on its own, after the rest: it drives a whole control plane.
TEST_PKGS ?= $(shell go list ./... | grep -v -e /test/e2e)

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-14s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate CRDs, RBAC and webhook manifests into config/.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd webhook \
		paths=./api/... paths=./controllers/... paths=./webhooks/... \
		output:crd:artifacts:config=config/crd/bases \
		output:rbac:artifacts:config=config/rbac \
		output:webhook:artifacts:config=config/webhook
	$(CONTROLLER_GEN) rbac:roleName=kubenexus-scheduler paths=./scheduler/... \
		output:rbac:artifacts:config=config/rbac/scheduler
	go run ./hack/schedulerroles > config/rbac/scheduler/bootstrap_roles.yaml.tmp
	mv config/rbac/scheduler/bootstrap_roles.yaml.tmp config/rbac/scheduler/bootstrap_roles.yaml
	go run ./hack/schedulerroles -own > config/rbac/scheduler/kube_scheduler_role.yaml.tmp
	mv config/rbac/scheduler/kube_scheduler_role.yaml.tmp config/rbac/scheduler/kube_scheduler_role.yaml

.PHONY: chart
chart: manifests ## Generate the chart's templates from config/ (charts/kubenexus/templates/generated).
	go run ./hack/chartgen

.PHONY: bundle
bundle: manifests ## Generate the OLM bundle from config/ (bundle/; hack/bundle is its own module).
	cd hack/bundle && go run . -root $(ROOT)

.PHONY: generate
generate: controller-gen ## Generate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...
	cd hack/image && go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...
	cd hack/bundle && go vet ./...
	cd hack/image && go vet ./...

.PHONY: lint
lint: ## golangci-lint (pinned in hack/tools/lint, built from source; config hack/golangci.yml) over the main module, hack/bundle and hack/image.
	hack/build-tools.sh golangci-lint
	$(TOOLS_BIN)/golangci-lint run --config hack/golangci.yml ./...
	cd hack/bundle && $(TOOLS_BIN)/golangci-lint run --config ../golangci.yml ./...
	cd hack/image && $(TOOLS_BIN)/golangci-lint run --config ../golangci.yml ./...

.PHONY: docs-check
docs-check: ## Fail when a Markdown file names a link, make target, path, Go identifier, chart values key or flag that does not exist (hack/docscheck).
	$(STATIC) go run $(STATIC_FLAGS) ./hack/docscheck -root $(ROOT)

.PHONY: verify
verify: generate manifests chart bundle fmt vet lint docs-check ## Regenerate everything, lint, check the docs' references, and fail if the tree changed.
	@hack/verify-clean.sh

##@ Build

# The binaries are static and their paths trimmed, as in the images; the e2e, demo
# and bench programs build with the same settings, so that they reuse the packages
# compiled for the binaries. The version is the chart's appVersion.
VERSION ?= $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' charts/kubenexus/Chart.yaml)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
K8S_VERSION ?= $(shell go list -m -f '{{.Version}}' k8s.io/kubernetes)
LDFLAGS ?= -s -w -X github.com/kube-nexus/kubenexus/cmd/internal/version.version=$(VERSION) -X github.com/kube-nexus/kubenexus/cmd/internal/version.revision=$(REVISION) -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION)+kubenexus-$(VERSION) -X k8s.io/component-base/version.gitCommit=$(REVISION)
# No DWARF is generated at all (-s -w would strip it at the link anyway): compiling
# without it takes 7-14% less CPU (the main binaries cold on 2 cores: 313-370 s ->
# 290-318 s); every static build and test shares these flags, and so its packages.
STATIC := CGO_ENABLED=0
STATIC_FLAGS := -trimpath -gcflags=all=-dwarf=false
GO_BUILD = $(STATIC) go build $(STATIC_FLAGS) -ldflags '$(LDFLAGS)'

# One go build for all of them, so that each link runs beside the other's compiles;
# each cmd/<name> becomes bin/kubenexus-<name>, and the kubectl plugin bin/kubectl-kubenexus.
BUILD_PKGS ?= ./cmd/manager ./cmd/scheduler ./cmd/kubectl-kubenexus
.PHONY: build
build: ## Build the manager and scheduler binaries and the kubectl plugin (kubectl kubenexus) into bin/ (static, as in the images).
	@mkdir -p $(BIN)/.build
	$(GO_BUILD) -o $(BIN)/.build/ $(BUILD_PKGS)
	@for p in $(notdir $(BUILD_PKGS)); do case $$p in kubectl-*) mv $(BIN)/.build/$$p $(BIN)/$$p;; *) mv $(BIN)/.build/$$p $(BIN)/kubenexus-$$p;; esac; done

IMAGE_ARCHES ?= amd64,arm64
REGISTRY ?= ghcr.io/kube-nexus
.PHONY: image
image: ## Build the manager and scheduler images without a container engine (linux/amd64 and arm64, IMAGE_ARCHES) into bin/image/: archives for docker load, podman load, kind load image-archive.
	cd hack/image && go run . -root $(ROOT) -out $(BIN)/image -version $(VERSION) -revision $(REVISION) -registry $(REGISTRY) -arch $(IMAGE_ARCHES)

.PHONY: image-push
image-push: ## Build the images and push them to REGISTRY as multi-architecture indexes (credentials from ~/.docker/config.json).
	cd hack/image && go run . -root $(ROOT) -out $(BIN)/image -version $(VERSION) -revision $(REVISION) -push $(REGISTRY) -arch $(IMAGE_ARCHES)

KREW_URI ?=
.PHONY: krew
krew: ## Package the kubectl plugin for krew: kubectl-kubenexus archives for linux and darwin (amd64, arm64) and windows (amd64), and the krew manifest naming their SHA-256, into bin/krew/ (KREW_URI: where the release publishes them; default its GitHub release).
	go run ./hack/krew -root $(ROOT) -out $(BIN)/krew -version $(VERSION) -uri '$(KREW_URI)' -ldflags '$(LDFLAGS)'

.PHONY: run
run: build ## Run the manager against the cluster in your KUBECONFIG (without its webhooks: they need a serving certificate); it deploys the scheduler image make image tags.
	$(BIN)/kubenexus-manager --namespace=kubenexus-system --scheduler-image=$(REGISTRY)/kubenexus-scheduler:$(VERSION) --enable-webhooks=false

##@ Demo

# The tools make demo builds after the binaries; training-operator, Kueue and
# kubectl come after them (the demo program builds the last two while it runs).
DEMO_TOOLS := etcd kube-apiserver kube-controller-manager kwok kwok-stages helm training-operator
.PHONY: demo
demo: ## Local cluster from source (etcd, kube-apiserver, kube-controller-manager, kwok), KubeNexus from its chart, a simulated GPU fleet and workload mix; prints a placement report (Kueue, for its scenario at the end, builds meanwhile).
	@hack/build-tools.sh --download $(DEMO_TOOLS) kueue kubectl
	$(MAKE) --no-print-directory build BUILD_PKGS="./cmd/manager ./cmd/scheduler ./hack/demo"
	hack/build-tools.sh $(DEMO_TOOLS)
	hack/demo.sh

.PHONY: demo-down
demo-down: ## Stop the cluster make demo left running.
	hack/demo.sh down

##@ Test

.PHONY: test-skew
test-skew: ## Run the api, operator, scheduler and Kueue integration suites against kube-apiserver 1.35, 1.36 and 1.37 (each built from source) and print a table.
	hack/test-skew.sh $(SKEW_MINORS)

.PHONY: envtest
envtest: ## Build etcd and kube-apiserver for envtest (cached).
	hack/build-tools.sh etcd kube-apiserver

# The e2e packages but the real node's (make test-e2e-node).
E2E_PKGS ?= $(shell go list ./test/e2e/... | grep -v -e /test/e2e/node -e /test/e2e/chaos -e /test/e2e/multikueue -e /test/e2e/kueueeta)

# The tools the e2e needs besides etcd and kube-apiserver.
E2E_TOOLS := kube-controller-manager kwok kwok-stages helm helm4 training-operator kueue lws kuberay jobset trainer promql-names

.PHONY: test
# Each step's tools build in the background (hack/background.sh, at a lower CPU
# priority) while the step before it runs its tests: the e2e's tools beside the unit and
# integration tests, the real node's beside the e2e.
test: test-prefetch envtest build ## Run the unit and integration tests, the e2e (real kube-apiserver + etcd; the e2e adds kube-controller-manager, kwok, Helm v3 and v4, training-operator, Kueue, LeaderWorkerSet, KubeRay, JobSet, Kubeflow Trainer), then KubeNexus on a real node (make test-e2e-node) and the fuzzers briefly.
	@hack/background.sh start e2e-tools hack/build-tools.sh $(E2E_TOOLS)
	@status=0; $(STATIC) go test $(TEST_FLAGS) $(GO_TEST_FLAGS) $(TEST_PKGS) || status=1; \
	hack/background.sh wait e2e-tools || status=1; exit $$status
	@hack/background.sh start e2e-node-prepare $(MAKE) --no-print-directory test-e2e-node-prepare
	@status=0; $(STATIC) go test $(TEST_FLAGS) $(GO_TEST_FLAGS) $(E2E_PKGS) || status=1; \
	hack/background.sh wait e2e-node-prepare || status=1; exit $$status
	@echo ">> the real node's e2e runs beside the tests of hack/bundle and hack/image and the fuzzers, which keep the CPUs busy while it mostly waits (its output follows theirs)"
	@( $(MAKE) --no-print-directory test-e2e-node-run > $(BIN)/test-e2e-node.log 2>&1; echo $$? > $(BIN)/test-e2e-node.rc ) & \
	status=0; \
	(cd hack/bundle && $(STATIC) go test $(TEST_FLAGS) $(GO_TEST_FLAGS) ./...) || status=1; \
	(cd hack/image && go test $(GO_TEST_FLAGS) ./...) || status=1; \
	$(MAKE) --no-print-directory fuzz FUZZ_TIME=30000x || status=1; \
	wait; echo ">> make test-e2e-node-run:"; cat $(BIN)/test-e2e-node.log; \
	if [ "$$(cat $(BIN)/test-e2e-node.rc)" != 0 ]; then echo "make test-e2e-node-run failed (above)"; exit 1; fi; \
	exit $$status

# The inner loop: `make test` is these three, the bundle's and image builder's tests and
# the fuzzers.
UNIT_PKGS ?= $(shell go list ./... | grep -v -e /test/integration -e /test/e2e)
.PHONY: test-unit
test-unit: ## Unit tests, the chart and image checks: no tools built, no API server.
	$(STATIC) go test $(TEST_FLAGS) $(GO_TEST_FLAGS) $(UNIT_PKGS)

.PHONY: test-integration
test-integration: envtest ## The envtest suites (api, operator, scheduler, Kueue) against kube-apiserver and etcd built from source.
	$(STATIC) go test $(TEST_FLAGS) $(GO_TEST_FLAGS) ./test/integration/...

# test-prefetch fetches, in the background, the modules of the e2e's and the real node's
# stale tools while etcd and kube-apiserver compile (a cold make test otherwise waits for
# each module's download in turn).
.PHONY: test-prefetch
test-prefetch:
	@hack/build-tools.sh --download $(E2E_TOOLS) kube-scheduler $(NODE_TOOLS)

.PHONY: test-e2e
test-e2e: test-prefetch envtest build ## The e2e: the chart installed on a local control plane with kube-controller-manager, kwok, training-operator, Kueue, LeaderWorkerSet, KubeRay, JobSet and Kubeflow Trainer.
	hack/build-tools.sh $(E2E_TOOLS)
	$(STATIC) go test $(TEST_FLAGS) $(GO_TEST_FLAGS) $(E2E_PKGS)

# The sizes of make test-chaos: the issue's (a 64-member gang, 20 trials, 200 pending
# pods); smaller ones make a quick run.
CHAOS_MEMBERS ?= 64
CHAOS_TRIALS ?= 20
CHAOS_COMPETITORS ?= 200
.PHONY: test-chaos
test-chaos: envtest build ## Nodes fail under running gangs (kube-controller-manager's node lifecycle and taint managers, kwok nodes): repaired in their rack against pending pods, or restarted whole; prints the times.
	hack/build-tools.sh kube-controller-manager kwok kwok-stages helm
	CHAOS_MEMBERS=$(CHAOS_MEMBERS) CHAOS_TRIALS=$(CHAOS_TRIALS) CHAOS_COMPETITORS=$(CHAOS_COMPETITORS) \
	$(STATIC) go test -count=1 $(TEST_FLAGS) $(GO_TEST_FLAGS) -v -run TestGangChaos ./test/e2e/chaos/

# MULTIKUEUE_REPORT receives make test-multikueue's table (Markdown).
MULTIKUEUE_REPORT ?= $(ROOT)/.multikueue/table.md
.PHONY: test-multikueue
test-multikueue: envtest build ## MultiKueue with three local clusters (a manager and two workers: etcd, kube-apiserver, kube-controller-manager, kwok, KubeNexus and Kueue v0.17 each): 40 gangs dispatched by Kueue's own AllAtOnce, then by KubeNexus (where each fits whole); prints both arms' table (~6 min).
	hack/build-tools.sh kube-controller-manager kwok kwok-stages helm kueue
	mkdir -p $(dir $(MULTIKUEUE_REPORT))
	MULTIKUEUE_REPORT=$(MULTIKUEUE_REPORT) $(STATIC) go test -count=1 $(TEST_FLAGS) $(GO_TEST_FLAGS) -v -run TestMultiKueueDispatch ./test/e2e/multikueue/

# The real node's tools (built only for it) and the images it runs, for this
# machine's architecture.
NODE_TOOLS := kubelet kube-proxy containerd containerd-shim-runc-v2 ctr cni-bridge cni-host-local cni-loopback
HOST_ARCH := $(shell go env GOARCH)

.PHONY: test-e2e-node
test-e2e-node: test-e2e-node-prepare test-e2e-node-run ## KubeNexus installed by helm on a real node (kubelet, kube-proxy, containerd 2 and Debian's runc; root): the images make image builds run as pods, a gang of real containers, helm upgrade, containers killed, helm uninstall.

.PHONY: test-e2e-node-prepare
test-e2e-node-prepare: envtest ## What make test-e2e-node runs on: Debian's runc and iptables where missing, the node's tools, the images for this machine's architecture.
	hack/node-deps.sh
	hack/build-tools.sh kube-controller-manager kube-scheduler helm $(NODE_TOOLS)
	cd hack/image && go run . -root $(ROOT) -out $(BIN)/image -version $(VERSION) -revision $(REVISION) -registry $(REGISTRY) -arch $(HOST_ARCH) -node-test-images

.PHONY: test-e2e-node-run
test-e2e-node-run: ## The real node's e2e alone (after make test-e2e-node-prepare; never from the test cache: the node, its binaries and images are outside what go test tracks).
	$(STATIC) go test -count=1 $(TEST_FLAGS) $(GO_TEST_FLAGS) ./test/e2e/node/

.PHONY: test-race
test-race: envtest ## The unit tests and the envtest suites under the race detector (every package compiled once more, with its instrumentation: about 8 minutes more on a fresh 2-core machine).
	go test -race $(GO_TEST_FLAGS) $(shell go list ./... | grep -v -e /test/e2e -e /test/chart -e /test/image)

# A count, not a duration: a duration -fuzztime can fail a target with "context
# deadline exceeded" at its end, a race in Go's fuzzing coordinator (golang/go#75804)
# seen here in `make test`, with no crasher found.
FUZZ_TIME ?= 300000x
.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZ_TIME inputs (gang-key parsing, classification).
	go test ./api/gang -run '^$$' -fuzz '^FuzzOf$$' -fuzztime $(FUZZ_TIME)
	go test ./api/gang -run '^$$' -fuzz '^FuzzIsDNS1123Subdomain$$' -fuzztime $(FUZZ_TIME)
	go test ./api/workload -run '^$$' -fuzz '^FuzzClassify$$' -fuzztime $(FUZZ_TIME)
	go test ./api/workload -run '^$$' -fuzz '^FuzzGangSourceOf$$' -fuzztime $(FUZZ_TIME)

##@ Tools

.PHONY: tools
tools: ## Build every pinned tool (controller-gen, etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok, kwok-stages, helm, helm4, training-operator, scheduler-plugins, kueue, lws, kuberay, jobset, trainer, golangci-lint, promql-names).
	hack/build-tools.sh

.PHONY: controller-gen
controller-gen: ## Build controller-gen (cached).
	hack/build-tools.sh controller-gen

##@ Benchmarks

.PHONY: bench
bench: ## CPU-ms/pod and pods/s of kubenexus-scheduler, stock kube-scheduler, scheduler-plugins (Coscheduling) and a null binder on one local apiserver (W1, W1b, W2, W4, W5; 5 runs each, W2 10, W4 20).
	hack/build-tools.sh etcd kube-apiserver kube-scheduler scheduler-plugins
	$(GO_BUILD) -o $(BIN)/kubenexus-scheduler ./cmd/scheduler
	$(STATIC) go run $(STATIC_FLAGS) ./test/bench -bin $(BIN) $(BENCH_FLAGS)

.PHONY: perf-upstream
# Upstream's scheduler_perf (test/integration/scheduler_perf of the pinned k8s.io/kubernetes)
# with stock's default profile and KubeNexus's default profile, each workload back to back:
# an in-process kube-apiserver and scheduler per run, etcd from bin/k8s. PERF_UPSTREAM_FLAGS:
# -workloads topic/testcase/workload,... (default: test/perfupstream.DefaultSelections), -arms.
# The in-process API server finds its package directory from its source path; -trimpath
# (shared with every other build) leaves that relative, and upstream's TEST_SRCDIR and
# TEST_WORKSPACE root it in the module cache.
PERF_UPSTREAM_FLAGS ?=
perf-upstream: ## Upstream's scheduler_perf workloads with stock's and KubeNexus's default profiles; table with ratios and upstream's thresholds in .perf-upstream/table.md.
	hack/build-tools.sh etcd
	@echo "perf-upstream: compiling upstream's scheduler_perf with KubeNexus's registry (an in-process kube-apiserver: a few minutes cold)"
	$(STATIC) go test $(STATIC_FLAGS) -tags perfupstream -c -o $(BIN)/perf-upstream.test ./test/perfupstream
	@mkdir -p .perf-upstream
	@echo "perf-upstream: running; progress in .perf-upstream/run.log"
	@rc=0; TEST_SRCDIR="$$(go env GOMODCACHE)" TEST_WORKSPACE=. PATH="$(BIN)/k8s:$$PATH" KUBE_CACHE_MUTATION_DETECTOR=false $(BIN)/perf-upstream.test -test.run '^$$' -test.bench BenchmarkPerfSchedulingUpstream -test.benchtime 1x -test.timeout 6h \
		-upstream-dir "$$(go list -m -f '{{.Dir}}' k8s.io/kubernetes)/test/integration/scheduler_perf" -out .perf-upstream $(PERF_UPSTREAM_FLAGS) > .perf-upstream/run.log 2>&1 || rc=$$?; \
		cat .perf-upstream/table.md 2>/dev/null || true; grep -E '^(--- FAIL|FAIL|panic)' .perf-upstream/run.log | head -20 || true; exit $$rc

.PHONY: bench-preemption
bench-preemption: ## Replay a seeded job stream (GPU shapes, run times and QoS of the Alibaba 2023 trace; gangs, elastic ranges and checkpoint intervals drawn) through stock DefaultPreemption and GangPreemption's own victim search, before and with checkpoint-aware costs, shrink-before-kill and consolidation: GPU-hours lost, waits, completion times, allocation, at four offered loads over 40 seeds (in process, ~40 s).
	KUBENEXUS_PREEMPTION_REPLAY=$(abspath $(TRACE))/openb_pod_list_default.csv $(STATIC) go test -count=1 -run TestPreemptionReplay -v ./scheduler/plugins/gangpreemption/

.PHONY: bench-placement
# multigpu50 repeats the default trace's first 7000 tasks and appends its multi-GPU ones, with no
# creation times: in file order it would replay the same tasks, so it is shuffled (seed 1, the
# same for every arm).
TRACE ?= ../shared/data/alibaba-gpu-2023
bench-placement: ## Replay the Alibaba 2023 GPU trace (default and multigpu50) through stock kube-scheduler, stock with MostAllocated, and kubenexus-scheduler; GPU allocation and fragmentation per arm, CSV + PNG + summary under .bench-placement/.
	hack/build-tools.sh etcd kube-apiserver kube-scheduler
	$(GO_BUILD) -o $(BIN)/kubenexus-scheduler ./cmd/scheduler
	$(STATIC) go run $(STATIC_FLAGS) ./test/benchplacement -bin $(BIN) -nodes $(TRACE)/openb_node_list_all_node.csv -pods $(TRACE)/openb_pod_list_default.csv $(BENCH_PLACEMENT_FLAGS)
	$(STATIC) go run $(STATIC_FLAGS) ./test/benchplacement -bin $(BIN) -nodes $(TRACE)/openb_node_list_all_node.csv -pods $(TRACE)/openb_pod_list_multigpu50.csv -shuffle-seed 1 $(BENCH_PLACEMENT_FLAGS)

# Seeded variants of the default trace: model-bound GPU tasks 10–50%, GPU-sharing tasks
# 20–100% (rounded up to whole GPUs, as every arm does), more CPU-only tasks.
VARIANTS ?= m10:model=0.1;m33:model=0.33;m50:model=0.5;s20m33:sharing=0.2,model=0.33;s60:sharing=0.6;s100m20:sharing=1,model=0.2;c30m33:cpu=0.3,model=0.33
.PHONY: bench-placement-variants
bench-placement-variants: ## Replay seeded variants of the default trace (VARIANTS: shares of CPU-only, GPU-sharing and model-bound tasks) through the three arms; one table under .bench-placement/.
	hack/build-tools.sh etcd kube-apiserver kube-scheduler
	$(GO_BUILD) -o $(BIN)/kubenexus-scheduler ./cmd/scheduler
	$(STATIC) go run $(STATIC_FLAGS) ./test/benchplacement -bin $(BIN) -nodes $(TRACE)/openb_node_list_all_node.csv -pods $(TRACE)/openb_pod_list_default.csv -whole-gpus -variants '$(VARIANTS)' $(BENCH_PLACEMENT_FLAGS)

.PHONY: bench-placement-nvl72
bench-placement-nvl72: ## NVLink-domain scenario: 12 domains of 18 four-GPU nodes, a stream of single-node and CPU-only pods, then domain-sized gangs; domains left whole and gangs placed in one domain per arm (~4 min).
	hack/build-tools.sh etcd kube-apiserver kube-scheduler
	$(GO_BUILD) -o $(BIN)/kubenexus-scheduler ./cmd/scheduler
	$(STATIC) go run $(STATIC_FLAGS) ./test/benchplacement -bin $(BIN) -scenario nvl72 $(BENCH_PLACEMENT_FLAGS)

.PHONY: bench-eta
bench-eta: ## Accuracy of the estimated start: gangs of the Alibaba trace's shapes and runtimes on 8 eight-GPU nodes; each gang's kubenexus.io/estimated-start at submission, with and without the queue model, against its real start (~10 min; eta.md under .bench-placement/).
	hack/build-tools.sh etcd kube-apiserver
	$(GO_BUILD) -o $(BIN)/kubenexus-scheduler ./cmd/scheduler
	$(STATIC) go run $(STATIC_FLAGS) ./test/benchplacement -bin $(BIN) -scenario eta -pods $(TRACE)/openb_pod_list_default.csv $(BENCH_PLACEMENT_FLAGS)

# ETA_KUEUE_OUT receives make bench-eta-kueue's report (eta.md, eta.csv).
ETA_KUEUE_OUT ?= $(ROOT)/.bench-eta-kueue
.PHONY: bench-eta-kueue
bench-eta-kueue: envtest build ## Accuracy of the estimated start of Kueue Workloads waiting for quota: 120 gangs of the Alibaba trace's shapes and runtimes submitted as Workloads to a ClusterQueue of 48 GPUs on 8 eight-GPU kwok nodes, beside the real Kueue v0.17 and KubeNexus; each Workload's kubenexus.io/estimated-start at submission, with and without Kueue's queues played, against its real start (~10 min; eta.md under .bench-eta-kueue/).
	hack/build-tools.sh kube-controller-manager kwok kwok-stages helm kueue
	mkdir -p $(ETA_KUEUE_OUT)
	ETA_KUEUE_OUT=$(ETA_KUEUE_OUT) ETA_KUEUE_PODS=$(abspath $(TRACE))/openb_pod_list_default.csv $(STATIC) go test -count=1 -timeout 45m $(TEST_FLAGS) $(GO_TEST_FLAGS) -v -run TestKueueETA ./test/e2e/kueueeta/

.PHONY: bench-webhook
bench-webhook: ## Peak RSS of kubenexus-manager under 64 concurrent maximum-size AdmissionReviews (printed, not asserted).
	hack/build-tools.sh etcd kube-apiserver
	$(GO_BUILD) -o $(BIN)/kubenexus-manager ./cmd/manager
	$(STATIC) go run $(STATIC_FLAGS) ./test/bench/webhookmem -bin $(BIN) $(BENCH_WEBHOOK_FLAGS)

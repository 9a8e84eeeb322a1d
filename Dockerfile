# syntax=docker/dockerfile:1
# Multi-target build of the KubeNexus binaries: static, on distroless, non-root.
#   docker build --target manager   -t kubenexus-manager .
#   docker build --target scheduler -t kubenexus-scheduler .
# `make image` builds the same images without a container engine. GO_VERSION is
# go.mod's go version (the official images set GOTOOLCHAIN=local: an older Go would
# refuse the module), and the binaries are stamped as make stamps them (VERSION:
# the chart's appVersion; REVISION: the commit; K8S_VERSION: the pinned
# k8s.io/kubernetes); test/image checks both against go.mod and the Makefile.
ARG GO_VERSION=1.26
FROM golang:${GO_VERSION} AS builder
WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY scheduler/ scheduler/
COPY webhooks/ webhooks/
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=v0.1.0
ARG REVISION=unknown
ARG K8S_VERSION=v1.37.2
ENV CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH}
RUN go build -trimpath -gcflags=all=-dwarf=false -o /out/ \
      -ldflags "-s -w -X github.com/kube-nexus/kubenexus/cmd/internal/version.version=${VERSION} -X github.com/kube-nexus/kubenexus/cmd/internal/version.revision=${REVISION} -X k8s.io/component-base/version.gitVersion=${K8S_VERSION}+kubenexus-${VERSION} -X k8s.io/component-base/version.gitCommit=${REVISION}" \
      ./cmd/manager ./cmd/scheduler \
 && mv /out/manager /out/kubenexus-manager && mv /out/scheduler /out/kubenexus-scheduler

FROM gcr.io/distroless/static:nonroot AS manager
WORKDIR /
COPY --from=builder /out/kubenexus-manager /kubenexus-manager
USER 65532:65532
ENTRYPOINT ["/kubenexus-manager"]

FROM gcr.io/distroless/static:nonroot AS scheduler
WORKDIR /
COPY --from=builder /out/kubenexus-scheduler /kubenexus-scheduler
USER 65532:65532
ENTRYPOINT ["/kubenexus-scheduler"]

# syntax=docker/dockerfile:1
# Multi-target build of the KubeNexus binaries: static, on distroless, non-root.
#   docker build --target manager   -t kubenexus-manager .
#   docker build --target scheduler -t kubenexus-scheduler .
FROM golang:1.25 AS builder
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
ENV CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH}
RUN go build -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" -o /out/kubenexus-manager ./cmd/manager
RUN go build -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" -o /out/kubenexus-scheduler ./cmd/scheduler

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

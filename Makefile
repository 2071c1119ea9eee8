# nodegen developer targets. Everything also works with plain `go` commands;
# see CONTRIBUTING.md.

GO ?= go

.PHONY: all build gen check vet test fuzz bench bench-go testcp

all: vet test check

build:
	$(GO) build -o bin/nodegen ./cmd/nodegen

gen:
	$(GO) run ./cmd/nodegen gen

check:
	$(GO) run ./cmd/nodegen check

vet:
	gofmt -l . | (! grep .) || (echo "gofmt needed" && exit 1)
	$(GO) vet ./...

test:
	$(GO) test -timeout 30m ./...

# Builds kube-apiserver, kube-controller-manager and etcd for the
# real-API-server tests into a cache outside the repository (reused when
# present); see hack/testcp/README.md.
testcp:
	bash hack/testcp/build.sh

# Runs every fuzz target for a short, fixed time.
FUZZTIME ?= 10s
fuzz:
	bash hack/fuzz.sh $(FUZZTIME)

# nodegen against `cue export` on synthetic sources of 5, 60, 1000 and
# 10,000 node groups: medians, ratios, growth, peak memory and the targets
# (see docs/performance.md). BENCHFLAGS="-sizes 5,60 -rounds 3" for a short
# run, BENCHFLAGS=-varied for sources whose groups all differ.
bench:
	$(GO) run ./hack/bench $(BENCHFLAGS)

# Each stage on its own (load, validate, render, verify, compare, ...).
bench-go:
	$(GO) test -run '^$$' -bench . ./internal/testing/bench/

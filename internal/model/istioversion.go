package model

import (
	"fmt"
	"strconv"
	"strings"
)

// The Istio releases nodegen knows and the Kubernetes minors each one is
// supported on: Istio's support status table, "Supported Kubernetes
// Versions" (istio.io docs/releases/supported-releases, from istio/istio.io
// data/compatibility/supportStatus.yml as of 2026-10-01), which each
// minor's announcement states at its release ("Istio 1.30.0 is officially
// supported on Kubernetes versions 1.32 to 1.36": istio/istio.io
// content/en/news/releases/1.30.x/announcing-1.30/_index.md). The table is
// edited after a release (1.31 gained Kubernetes 1.37 on 2026-09-30); the
// "tested, but not supported" minors are not counted. LastPatch is the
// newest patch tagged in istio/istio as of 2026-10-01.

// IstioMinor is one minor release line of Istio.
type IstioMinor struct {
	// Minor is the minor version, e.g. 30 for 1.30.x.
	Minor int
	// LastPatch is the newest patch release nodegen has read (1.<Minor>.<LastPatch>).
	LastPatch int
	// OldestKubernetes and NewestKubernetes bound the Kubernetes minors
	// the line is supported on.
	OldestKubernetes, NewestKubernetes int
}

// IstioReleases are the Istio release lines read, oldest first: those
// supported on a Kubernetes minor nodegen supports.
var IstioReleases = []IstioMinor{
	{Minor: 26, LastPatch: 8, OldestKubernetes: 29, NewestKubernetes: 33},
	{Minor: 27, LastPatch: 9, OldestKubernetes: 29, NewestKubernetes: 33},
	{Minor: 28, LastPatch: 10, OldestKubernetes: 30, NewestKubernetes: 34},
	{Minor: 29, LastPatch: 8, OldestKubernetes: 31, NewestKubernetes: 35},
	{Minor: 30, LastPatch: 5, OldestKubernetes: 32, NewestKubernetes: 36},
	{Minor: 31, LastPatch: 1, OldestKubernetes: 32, NewestKubernetes: 37},
}

// IstioRelease is what nodegen knows of one Istio version.
type IstioRelease struct {
	Version      string
	Minor, Patch int
	// Known: the version is a release of a line in IstioReleases.
	Known bool
	IstioMinor
}

// LookupIstioRelease reads an Istio version "1.<minor>.<patch>". err is
// set when it is not of that form.
func LookupIstioRelease(v string) (IstioRelease, error) {
	parts := strings.Split(v, ".")
	bad := fmt.Errorf("Istio version %q is not 1.<minor>.<patch>", v)
	if len(parts) != 3 || parts[0] != "1" {
		return IstioRelease{}, bad
	}
	minor, err := strconv.Atoi(parts[1])
	if err != nil {
		return IstioRelease{}, bad
	}
	patch, err := strconv.Atoi(parts[2])
	if err != nil {
		return IstioRelease{}, bad
	}
	r := IstioRelease{Version: v, Minor: minor, Patch: patch}
	for _, m := range IstioReleases {
		if m.Minor == minor {
			r.IstioMinor = m
			r.Known = patch <= m.LastPatch
		}
	}
	return r, nil
}

// SupportsKubernetes says whether the release's line is supported on
// Kubernetes 1.<minor>.
func (r IstioRelease) SupportsKubernetes(minor int) bool {
	return r.IstioMinor.Minor != 0 && minor >= r.OldestKubernetes && minor <= r.NewestKubernetes
}

// KubernetesRange names the Kubernetes minors the release's line is
// supported on, "1.32 to 1.36".
func (r IstioRelease) KubernetesRange() string {
	return fmt.Sprintf("1.%d to 1.%d", r.OldestKubernetes, r.NewestKubernetes)
}

// NewestIstioRelease is the newest version in IstioReleases.
func NewestIstioRelease() string {
	m := IstioReleases[len(IstioReleases)-1]
	return fmt.Sprintf("1.%d.%d", m.Minor, m.LastPatch)
}

// IstioReleasesFor names the newest release of each line supported on
// Kubernetes 1.<minor>, oldest first.
func IstioReleasesFor(minor int) []string {
	var out []string
	for _, m := range IstioReleases {
		if minor >= m.OldestKubernetes && minor <= m.NewestKubernetes {
			out = append(out, fmt.Sprintf("1.%d.%d", m.Minor, m.LastPatch))
		}
	}
	return out
}

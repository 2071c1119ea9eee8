package validate

import (
	"math"
	"math/big"
)

// maxMemoryTotalGiB is the largest --memory-total the Cluster Autoscaler
// holds: it parses the flag's GiB into an int64 and multiplies them by
// 2^30 into bytes, also an int64, which wraps beyond this
// (kubernetes/autoscaler cluster-autoscaler-1.35.2, config/flags/flags.go:
// parseMinMaxFlag, then minMemoryTotal * units.GiB).
const maxMemoryTotalGiB = math.MaxInt64 >> 30

// capBounds holds each rendered cap flag to what the autoscaler parses it
// into: the cap plus what the declared nodes outside the MIGs add to it
// (the rendered --cores-total, --memory-total and --max-nodes-total)
// must fit a signed 64-bit integer (flags.go:
// parseMinMaxFlag uses strconv.ParseInt(…, 10, 64),
// --max-nodes-total is a flag.Int), and the memory total its bytes. A sum
// beyond them is rendered as a wrapped negative number or refused by the
// autoscaler at start.
func (c *checker) capBounds() {
	caps := c.src.Cluster.Autoscaler.Caps
	if caps == nil {
		return
	}
	// The declared nodes' sums, without wrapping.
	cpu, mem, nodes := new(big.Int), new(big.Int), new(big.Int)
	for _, n := range c.src.DeclaredNodes() {
		nodes.Add(nodes, big.NewInt(1))
		cpu.Add(cpu, big.NewInt(n.CPU))
		mem.Add(mem, big.NewInt(n.MemoryGiB))
	}
	base := sel("cluster", "autoscaler", "caps")
	check := func(field []any, value int64, declared *big.Int, limit int64, flag, unit, why string) {
		sum := new(big.Int).Add(big.NewInt(value), declared)
		if sum.Cmp(big.NewInt(limit)) <= 0 {
			return
		}
		added := ""
		if declared.Sign() != 0 {
			added = " plus the " + declared.String() + " of the nodes declared outside the MIGs (" + sum.String() + ")"
		}
		c.at(join(base, field...), "%d %s%s is beyond what the Cluster Autoscaler holds in %s, at most %d: %s (cluster-autoscaler-1.35.2 config/flags/flags.go)", value, unit, added, flag, limit, why)
	}
	const int64Why = "it parses the flag into a signed 64-bit integer, and the rendered sum would wrap to a negative number"
	if caps.MaxNodesTotal > 0 {
		check([]any{"maxNodesTotal"}, int64(caps.MaxNodesTotal), nodes, math.MaxInt64, "--max-nodes-total", "Nodes", int64Why)
	}
	if r := caps.Cores; r != nil {
		check([]any{"cores", "max"}, r.Max, cpu, math.MaxInt64, "--cores-total", "vCPUs", int64Why)
	}
	if r := caps.MemoryGiB; r != nil {
		check([]any{"memoryGiB", "max"}, r.Max, mem, maxMemoryTotalGiB, "--memory-total", "GiB",
			"it multiplies the flag's GiB by 2^30 into bytes held in a signed 64-bit integer, which wraps beyond that")
	}
	// --gpu-total is rendered as written (the declared nodes' GPUs count
	// towards none): the decoder's int64 already bounds it.
}

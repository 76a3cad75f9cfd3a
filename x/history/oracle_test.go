package history

import (
	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// viewOracle is the straightforward form of viewMapped, which builds the
// whole thread's filtered, grouped and shortened copy before choosing what
// fits. The differential tests hold viewMapped to it.
func (p *Policy) viewOracle(src []ledger.Turn, idx []int, led []ledger.Turn, sum *artifact.Summary, budget int) ([]ledger.Turn, bool) {
	if sum == nil {
		sum = latestSummary(led)
	}
	pin := p.pinnedEnd(src)
	var rest []ledger.Turn
	for i := pin; i < len(src); i++ {
		if isSummaryTurn(src[i]) {
			continue
		}
		if sum != nil && idx[i] >= sum.First && idx[i] <= sum.Last {
			continue
		}
		rest = append(rest, src[i])
	}
	head := append([]ledger.Turn(nil), src[:pin]...)
	if sum != nil {
		head = append(head, summaryTurn(*sum))
	}
	used := Estimate(head)

	total := used + Estimate(rest)
	if sum == nil && len(rest) == len(src)-pin {
		for i := len(src) - 1; i >= pin; i-- {
			if n, ok := reported(src[i]); ok {
				total = max(total, n+Estimate(src[i+1:]))
				break
			}
		}
	}
	if total <= budget {
		return append(head, rest...), false
	}

	groups := groupTurns(rest)
	shortened := make([]ledger.Turn, len(rest))
	copy(shortened, rest)
	for i := 0; i < len(shortened)-p.cfg.keep; i++ {
		shortened[i] = p.shorten(shortened[i])
	}
	start := len(groups)
	for g := len(groups) - 1; g >= 0; g-- {
		n := Estimate(shortened[groups[g][0]:groups[g][1]])
		if g < len(groups)-1 && used+n > budget {
			break
		}
		used += n
		start = g
	}
	if start == len(groups) {
		return head, len(groups) > 0
	}
	return append(head, shortened[groups[start][0]:]...), start > 0
}

// mapIndexesOracle is mapIndexes without its shortcut.
func mapIndexesOracle(src, led []ledger.Turn) []int {
	idx := make([]int, len(src))
	j := 0
	for i, t := range src {
		if j < len(led) && sameTurn(t, led[j]) {
			idx[i] = j
			j++
			continue
		}
		idx[i] = j - 1
	}
	return idx
}
